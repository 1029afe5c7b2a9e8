// Without --dev-login the demo offers no sign-in by name: only a token
// (here from `chatd token`), and a bad token is refused with a message.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startChatd } from '../lib/chatd.mjs';
import { launch } from '../lib/browser.mjs';

const WAIT = 20_000;
/** @type {Awaited<ReturnType<typeof startChatd>>} */
let chatd;
/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  chatd = await startChatd({ args: ['--log-level', 'warn'] });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await chatd?.stop();
});

test('without --dev-login: token sign-in only', async () => {
  const resp = await fetch(`${chatd.base}/api/dev/login`, { method: 'POST', body: '{"user":"carol"}' });
  assert.equal(resp.status, 404, 'the dev login answers 404 by default');

  const context = await browser.newContext({ viewport: { width: 390, height: 720 } });
  const page = await context.newPage();
  await page.goto(`${chatd.base}/`);
  await page.getByTestId('token-form').waitFor({ timeout: WAIT });
  assert.equal(await page.getByTestId('dev-login-form').isVisible(), false, 'a name-only form without --dev-login');

  await page.getByTestId('token-input').fill('not-a-token');
  await page.getByTestId('token-input').press('Enter');
  await page.getByTestId('signin-error').filter({ hasText: /token/i }).waitFor({ timeout: WAIT });

  await page.getByTestId('token-input').fill(await chatd.token('carol'));
  await page.getByTestId('token-input').press('Enter');
  await page.getByTestId('me').filter({ hasText: 'carol' }).waitFor({ timeout: WAIT });
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: WAIT });
  await context.close();
});
