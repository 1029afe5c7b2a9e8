// The demo's accessibility, audited by axe-core (Deque's rules engine, run
// inside the real Chromium) in each state a user meets: the sign-in page,
// the empty app, an open chat with a link, a message's actions and its
// delete question, the reconnect banner; at a desktop's width in light mode
// and a phone's in dark mode. Any violation fails, with axe's own words.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { startChatd, demoArgs } from '../lib/chatd.mjs';
import { launch } from '../lib/browser.mjs';

const require = createRequire(import.meta.url);
const axePath = require.resolve('axe-core/axe.min.js');
const axeVersion = JSON.parse(readFileSync(require.resolve('axe-core/package.json'), 'utf8')).version;
const WAIT = 20_000;

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let chatd;
/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  chatd = await startChatd({ args: demoArgs });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await chatd?.stop();
});

/**
 * audit runs axe on the page as it is and returns its violations, one line
 * each: rule, impact, what to fix and where.
 * @param {import('playwright-core').Page} page
 */
async function audit(page) {
  // The page's CSP allows no inline script; the contexts bypass it for axe.
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: axePath });
  /** @type {{id: string, impact: string, help: string, nodes: {target: string[], failureSummary: string}[]}[]} */
  const violations = await page.evaluate(async () => (await /** @type {any} */ (window).axe.run(document, { resultTypes: ['violations'] })).violations);
  return violations.flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${v.help} at ${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`));
}

const looks = /** @type {const} */ ([
  ['desktop, light', { viewport: { width: 1280, height: 800 }, colorScheme: 'light' }, 'ada', 'ben'],
  ['phone, dark', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: 'dark' }, 'cy', 'dee'],
]);

for (const [look, opts, me, other] of looks) {
  test(`axe finds nothing to fix: ${look}`, async () => {
    const context = await browser.newContext({ ...opts, bypassCSP: true });
    const page = await context.newPage();
    /** @type {string[]} */
    const found = [];
    const check = async (/** @type {string} */ state) => found.push(...(await audit(page)).map((v) => `${state}: ${v}`));

    await page.goto(`${chatd.base}/`);
    await page.getByTestId('dev-login-form').waitFor({ timeout: WAIT });
    await check('sign-in');

    await page.getByTestId('dev-login-name').fill(me);
    await page.getByTestId('dev-login-name').press('Enter');
    await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: WAIT });
    await check('no chat yet');

    await page.getByTestId('new-chat-users').fill(other);
    await page.getByTestId('create-direct').click();
    await page.getByTestId('chat-title').filter({ hasText: other }).waitFor({ timeout: WAIT });
    await page.getByTestId('compose').fill('see https://example.com/a?b=c');
    await page.getByTestId('compose').press('Enter');
    const mine = page.getByTestId('message').filter({ hasText: 'see https://example.com' });
    await mine.getByTestId('message-state').filter({ hasText: 'accepted' }).waitFor({ timeout: WAIT });
    await check('a chat with a link');

    const body = mine.getByTestId('message-body');
    // At its start, on "see": the middle is the link.
    const at = { position: { x: 4, y: 4 } };
    await ('hasTouch' in opts ? body.tap(at) : body.click(at));
    await mine.getByTestId('delete').waitFor({ state: 'visible', timeout: WAIT });
    await check('a message\'s actions');
    await mine.getByTestId('delete').click();
    await mine.getByTestId('delete-confirm').waitFor({ timeout: WAIT });
    await check('the delete question');
    await mine.getByTestId('delete-cancel').click();

    await context.setOffline(true);
    await page.locator('[data-testid="banner"][data-state="reconnecting"]').waitFor({ timeout: WAIT });
    await check('the reconnect banner');
    await context.setOffline(false);

    await context.close();
    assert.deepEqual(found, [], `axe-core ${axeVersion} found what to fix:\n${found.join('\n')}`);
  });
}
