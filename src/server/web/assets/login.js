// `npm start` prints /login#token=…: the fragment never reaches the server (or its logs);
// this fills the field from it and removes it from the address bar.
(() => {
  const match = /^#token=([^&]+)$/.exec(location.hash);
  const field = document.getElementById('token');
  if (!match || !field) return;
  field.value = decodeURIComponent(match[1]);
  history.replaceState(null, '', location.pathname + location.search);
})();
