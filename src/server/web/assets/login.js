// `npm start` prints /login#token=…: the fragment never reaches the server (or its logs);
// this fills the field from it and removes it from the address bar.
(() => {
  // The inbox shows times in the approver's own zone: the browser knows it, the server does not.
  try {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone)
      // biome-ignore lint/suspicious/noDocumentCookie: a plain cookie works in every browser; the value is a checked zone name
      document.cookie = `countersign_tz=${encodeURIComponent(zone)}; path=/; samesite=strict; max-age=31536000`;
  } catch {}
  const match = /^#token=([^&]+)$/.exec(location.hash);
  const field = document.getElementById('token');
  if (!match || !field) return;
  field.value = decodeURIComponent(match[1]);
  history.replaceState(null, '', location.pathname + location.search);
})();
