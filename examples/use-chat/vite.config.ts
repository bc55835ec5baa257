import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** Served under the chat's cookie path, so the page's fetches to /chat/api/ui carry the sign-in. */
export default defineConfig({
  root: import.meta.dirname,
  base: '/chat/ui/',
  plugins: [react()],
  logLevel: 'warn',
  // One page with React and the AI SDK in it: one chunk is the point, not a problem.
  build: { chunkSizeWarningLimit: 2048 },
});
