// A `#token=` link must not swap the identity of a signed-in tab behind the
// user's back (login CSRF: a link from someone else would have them write
// into the sender's account unawares). A link for the user already signed
// in goes through silently; one for another user is asked about in the
// page, and only an explicit yes switches.

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

/**
 * whoAfterLink waits for the page to ask about switching and returns
 * 'asked'; if it does not ask in time, it returns who is signed in then.
 * (The signed-in header cannot be the signal: it shows the old user until
 * a reload, so it would win any race with the question.)
 * @param {import('playwright-core').Page} page
 */
async function whoAfterLink(page) {
  try {
    await page.getByTestId('switch-user').waitFor({ timeout: WAIT });
    return 'asked';
  } catch {
    return (await page.getByTestId('me').textContent()) ?? '';
  }
}

/** signedInAs waits for the page to be connected as user. @param {import('playwright-core').Page} page @param {string} user */
async function signedInAs(page, user) {
  await page.getByTestId('me').filter({ hasText: user }).waitFor({ timeout: WAIT });
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: WAIT });
}

test('a #token= link for another user asks before switching', async () => {
  const alice = await chatd.token('alice');
  const mallory = await chatd.token('mallory');
  const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err));

  // A fresh tab has no identity to replace: the link signs in.
  await page.goto(`${chatd.base}/#token=${alice}`);
  await signedInAs(page, 'alice');

  // A link for another user, followed in the signed-in tab.
  await page.evaluate((tok) => {
    location.hash = `#token=${tok}`;
  }, mallory);
  assert.equal(await whoAfterLink(page), 'asked', 'a link for mallory replaced alice without asking');
  assert.match((await page.getByTestId('switch-user').textContent()) ?? '', /mallory/, 'the question names the link\'s user');
  assert.doesNotMatch(page.url(), /token=/, 'the token stays in the address bar while asking');
  await page.getByTestId('switch-decline').click();
  await page.getByTestId('switch-user').waitFor({ state: 'hidden', timeout: WAIT });
  await signedInAs(page, 'alice');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('chatd.token')), alice, 'declining keeps alice\'s token');

  // Loading the page with such a link asks as well, and yes switches.
  await page.goto('about:blank');
  await page.goto(`${chatd.base}/#token=${mallory}`);
  assert.equal(await whoAfterLink(page), 'asked', 'a page load with a link for mallory replaced alice without asking');
  await page.getByTestId('switch-accept').click();
  await signedInAs(page, 'mallory');

  // A link for the user already signed in goes through without a question.
  const mallory2 = await chatd.token('mallory');
  await page.evaluate((tok) => {
    location.hash = `#token=${tok}`;
  }, mallory2);
  await signedInAs(page, 'mallory');
  assert.equal(await page.getByTestId('switch-user').isVisible(), false, 'asked about a link for the same user');
  assert.doesNotMatch(page.url(), /token=/);

  assert.deepEqual(errors.map(String), [], 'errors on the page');
  await context.close();
});
