import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Browser tests need Debian's Chromium. Without it they are skipped with one line saying
 * how to get it — except under CI=true, where they run (and fail) rather than skip.
 */
export const browserMissing = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (browserMissing) {
  console.log(`browser tests skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // Root in a container, no GPU, and a closed network that background traffic would flood.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
