/**
 * Logs an error's message only when it differs from the last one: a store that is down fails
 * every poll, and one line says so as well as a thousand.
 */
export function onceEach(write: (message: string) => void): (error: unknown) => void {
  let last = '';
  return (error) => {
    const message = error instanceof Error ? error.message : String(error);
    if (message === last) return;
    last = message;
    write(message);
  };
}
