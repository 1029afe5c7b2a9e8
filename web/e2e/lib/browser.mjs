// Debian's Chromium, headless, driven over CDP by playwright-core (which
// downloads no browser of its own).

import { chromium } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

export function launch() {
  return chromium.launch({
    executablePath: chromiumPath,
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
