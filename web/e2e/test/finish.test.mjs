// The demo's finish (issue 32, items 13 and 14), in a real Chromium against
// a real chatd, at a desktop's width (1280×800, a mouse) and a phone's
// (390×844, touch): the reconnect banner floats over the page in plain
// words with a countdown; message actions appear on hover or tap instead
// of filling every bubble; emoji have a colour font and reaction chips are
// readable in dark mode; typing shows at once right after a send; errors
// are sentences; an over-long message stays in the composer with the limit
// shown; links open safely; delete asks first; the sign-in page does not
// probe the development login on each reload; there is a favicon; the chat
// list shows the last message and its time; "read by" survives a reload.
//
// Screenshots go to SHOTS_DIR (default web/e2e/artifacts/shots) named
// PREFIX-desktop-NAME.png and PREFIX-phone-NAME.png, PREFIX being
// SHOTS_PREFIX (default "after"), so the same file run on older code gives
// the "before" pictures.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChatd, demoArgs } from '../lib/chatd.mjs';
import { launch } from '../lib/browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const shots = process.env.SHOTS_DIR || join(here, '..', 'artifacts', 'shots');
const prefix = process.env.SHOTS_PREFIX || 'after';
const WAIT = 20_000;
const DESKTOP = { viewport: { width: 1280, height: 800 } };
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let chatd;
/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  await mkdir(shots, { recursive: true });
  chatd = await startChatd({ args: demoArgs });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await chatd?.stop();
});

/** shot saves a screenshot as PREFIX-KIND-NAME.png. @param {import('playwright-core').Page} page @param {'desktop'|'phone'} kind @param {string} name */
function shot(page, kind, name) {
  return page.screenshot({ path: join(shots, `${prefix}-${kind}-${name}.png`) });
}

/**
 * @param {string} user @param {object} opts
 * @param {(c: import('playwright-core').BrowserContext) => Promise<void>} [setup] runs before the page loads
 */
async function signIn(user, opts, setup) {
  const context = await browser.newContext(opts);
  if (setup) await setup(context);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err));
  await page.goto(`${chatd.base}/`);
  await page.getByTestId('dev-login-name').fill(user);
  await page.getByTestId('dev-login-name').press('Enter');
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: WAIT });
  return { context, page, errors };
}

/** @param {import('playwright-core').Page} page @param {string} text */
function row(page, text) {
  return page.getByTestId('message').filter({ has: page.getByTestId('message-body').getByText(text, { exact: true }) });
}

/** until polls fn until it returns a truthy value. @template T @param {() => Promise<T>} fn @param {string} what */
async function until(fn, what, ms = WAIT) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** send types text into the composer and sends it. @param {import('playwright-core').Page} page @param {string} text */
async function send(page, text) {
  await page.getByTestId('compose').fill(text);
  await page.getByTestId('compose').press('Enter');
  await row(page, text).getByTestId('message-state').filter({ hasText: /^(accepted|read by .*)$/ }).waitFor({ timeout: WAIT });
}

test('sign-in page: no development-login probe on a reload, and a favicon', async () => {
  const context = await browser.newContext(DESKTOP);
  const page = await context.newPage();
  /** @type {(string|null)[]} */
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/dev/login') posts.push(r.postData());
  });
  await page.goto(`${chatd.base}/`);
  await page.getByTestId('dev-login-form').waitFor({ timeout: WAIT });
  const first = posts.length;
  await page.reload();
  await page.getByTestId('dev-login-form').waitFor({ timeout: WAIT });
  await page.waitForTimeout(300);
  await shot(page, 'desktop', 'signin');
  assert.equal(posts.length, first, `a reload posted to the development login again: ${JSON.stringify(posts)}`);
  const icon = await page.locator('link[rel="icon"]').getAttribute('href', { timeout: 1000 }).catch(() => null);
  assert.ok(icon, 'no <link rel="icon">');
  await context.close();
});

// An own message is shown from its send's answer at once, and merged with
// the SDK's copy when the chat's seqs before it have arrived. A question the
// user opened on the row meanwhile (delete, or a phone's tapped actions) must
// survive that merge, or the click lands on nothing.
test('an own message keeps its open delete question when its chat catches up', async () => {
  /** @type {{ws: import('playwright-core').WebSocketRoute, data: string | Buffer}[]} */
  const held = [];
  /** @type {(() => void)[]} */
  const heldFetches = [];
  let hold = false;
  const carol = await signIn('carol', DESKTOP, async (context) => {
    await context.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((m) => server.send(m));
      server.onMessage((m) => {
        if (hold && String(m).includes('"type":"msg"')) held.push({ ws, data: m });
        else ws.send(m);
      });
    });
    // The SDK fills a gap from history after a moment: held back too.
    await context.route(/\/api\/chats\/[^/]+\/messages/, async (route) => {
      if (!hold) return route.continue();
      await new Promise((ok) => heldFetches.push(() => ok(undefined)));
      await route.continue();
    });
  });
  const dave = await signIn('dave', DESKTOP);
  await carol.page.getByTestId('new-chat-users').fill('dave');
  await carol.page.getByTestId('create-direct').click();
  await carol.page.getByTestId('chat-title').filter({ hasText: 'dave' }).waitFor({ timeout: WAIT });
  const chat = new URLSearchParams(new URL(carol.page.url()).hash.slice(1)).get('chat') ?? '';
  await send(carol.page, 'hello dave');
  await dave.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`).click();
  await row(dave.page, 'hello dave').waitFor({ timeout: WAIT });

  // dave's message reaches carol's browser late: hers after it waits for it.
  hold = true;
  await send(dave.page, 'from dave');
  await until(async () => held.length > 0, 'dave\'s message held on its way to carol');
  await send(carol.page, 'mine');
  const r = row(carol.page, 'mine');
  await r.hover();
  await r.getByTestId('delete').click();
  await r.getByTestId('delete-confirm').waitFor({ timeout: WAIT });

  hold = false;
  for (const { ws, data } of held.splice(0)) ws.send(data);
  for (const go of heldFetches.splice(0)) go();
  await row(carol.page, 'from dave').waitFor({ timeout: WAIT });
  await carol.page.waitForTimeout(300);
  assert.ok(await r.getByTestId('delete-confirm').isVisible(), 'the delete question went away when the chat caught up');
  await r.getByTestId('delete-confirm').click();
  await carol.page.getByTestId('message-body').filter({ hasText: 'message deleted' }).waitFor({ timeout: WAIT });
  await row(dave.page, 'mine').waitFor({ state: 'detached', timeout: WAIT });

  // The same for the actions a tap opened (a phone's way to them).
  hold = true;
  await send(dave.page, 'again from dave');
  await until(async () => held.length > 0, 'dave\'s second message held on its way to carol');
  await send(carol.page, 'tapped');
  const tapped = row(carol.page, 'tapped');
  await tapped.getByTestId('message-body').click();
  await until(async () => /\bopen\b/.test((await tapped.getAttribute('class')) ?? ''), 'the tapped row\'s actions to open');
  hold = false;
  for (const { ws, data } of held.splice(0)) ws.send(data);
  for (const go of heldFetches.splice(0)) go();
  await row(carol.page, 'again from dave').waitFor({ timeout: WAIT });
  await carol.page.waitForTimeout(300);
  assert.match((await tapped.getAttribute('class')) ?? '', /\bopen\b/, 'the tapped actions closed when the chat caught up');

  assert.deepEqual([...carol.errors, ...dave.errors].map(String), [], 'errors on the pages');
  await carol.context.close();
  await dave.context.close();
});

test('the demo, finished: desktop and phone', async (t) => {
  const alice = await signIn('alice', DESKTOP);
  const bob = await signIn('bob', PHONE);
  let chat = '';
  const link = 'https://example.com/path?q=1';

  await t.test('alice starts a chat with bob and writes, with a link', async () => {
    await alice.page.getByTestId('new-chat-users').fill('bob');
    await alice.page.getByTestId('create-direct').click();
    await alice.page.getByTestId('chat-title').filter({ hasText: 'bob' }).waitFor({ timeout: WAIT });
    chat = new URLSearchParams(new URL(alice.page.url()).hash.slice(1)).get('chat') ?? '';
    await send(alice.page, 'hi bob');
    await send(alice.page, 'how are you?');
    await send(alice.page, `look: ${link} (not this: javascript:alert(1))`);
  });

  await t.test('bob opens the chat on his phone: bubbles without their actions until tapped', async () => {
    await bob.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`).click();
    const mine = row(bob.page, 'hi bob');
    await mine.waitFor({ timeout: WAIT });
    await row(alice.page, 'hi bob').getByTestId('message-state').filter({ hasText: 'read by bob' }).waitFor({ timeout: WAIT });
    await shot(bob.page, 'phone', 'chat');
    const react = mine.locator('[data-testid="react"][data-emoji="👍"]');
    const shown = await react.isVisible();
    const h = (await mine.boundingBox())?.height ?? 0;
    await mine.getByTestId('message-body').tap();
    await react.waitFor({ state: 'visible', timeout: WAIT });
    await shot(bob.page, 'phone', 'actions');
    await react.tap();
    assert.equal(shown, false, 'a phone shows every bubble\'s actions all the time');
    assert.ok(h < 80, `a one-line bubble is ${h}px high on a phone`);
    await row(alice.page, 'hi bob').locator('[data-testid="reaction"][data-emoji="👍"]').waitFor({ timeout: WAIT });
    // A tap elsewhere closes them again.
    await row(bob.page, 'how are you?').getByTestId('message-body').tap();
    await until(async () => !(await mine.locator('[data-testid="react"]').first().isVisible()), 'the first bubble\'s actions to close');
  });

  await t.test('links open in a new tab, safely; other schemes stay text', async () => {
    for (const p of [alice.page, bob.page]) {
      const r = p.getByTestId('message').filter({ hasText: 'look:' });
      const a = r.locator('a');
      await a.first().waitFor({ timeout: WAIT });
      assert.equal(await a.count(), 1, 'only the https link is a link');
      assert.equal(await a.getAttribute('href'), link);
      assert.equal(await a.getAttribute('target'), '_blank');
      assert.deepEqual((await a.getAttribute('rel'))?.split(/\s+/).sort(), ['nofollow', 'noopener', 'noreferrer']);
      assert.match((await r.getByTestId('message-body').textContent()) ?? '', /javascript:alert\(1\)/);
    }
  });

  await t.test('typing shows at once right after a send', async () => {
    await alice.page.getByTestId('compose').fill('quick one');
    await alice.page.getByTestId('compose').press('Enter');
    await row(bob.page, 'quick one').waitFor({ timeout: WAIT });
    await until(async () => (await bob.page.getByTestId('typing').textContent()) === '', "bob's typing line to clear");
    const t0 = Date.now();
    await alice.page.getByTestId('compose').pressSequentially('and', { delay: 50 });
    await bob.page.getByTestId('typing').filter({ hasText: 'alice is typing…' }).waitFor({ timeout: 6000 });
    const late = Date.now() - t0;
    assert.ok(late < 1500, `bob saw alice typing ${late} ms after she started`);
    await alice.page.getByTestId('compose').fill('');
  });

  await t.test('the chat list shows the last message and its time', async () => {
    const item = alice.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`);
    await shot(alice.page, 'desktop', 'list');
    await item.getByTestId('chat-last').filter({ hasText: 'quick one' }).waitFor({ timeout: WAIT });
    assert.match((await item.getByTestId('chat-time').textContent()) ?? '', /\d/);
    await bob.page.getByTestId('back').tap();
    await bob.page.waitForTimeout(500);
    await shot(bob.page, 'phone', 'list');
    // alice's "typing…" stands in the preview's place for a few seconds.
    await bob.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`).getByTestId('chat-last').filter({ hasText: 'quick one' }).waitFor({ timeout: 8000 });
    await bob.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`).tap();
    await row(bob.page, 'quick one').waitFor({ timeout: WAIT });
  });

  await t.test('errors are sentences, not protocol', async () => {
    for (const [users, button] of [['alice', 'create-direct'], ['no!such', 'create-direct']]) {
      await alice.page.getByTestId('new-chat-users').fill(users);
      await alice.page.getByTestId(button).click();
      const err = alice.page.getByTestId('new-chat-error');
      await until(async () => (await err.textContent()) !== '', `an error for ${users}`);
      const text = (await err.textContent()) ?? '';
      if (users === 'alice') await shot(alice.page, 'desktop', 'error');
      assert.doesNotMatch(text, /http \d{3}|invalid:|\w+: \w+: /, `a raw error for "${users}": ${text}`);
    }
    await alice.page.getByTestId('new-chat-users').fill('');
  });

  await t.test('an over-long message stays in the composer, with the limit said before sending', async () => {
    const box = alice.page.getByTestId('compose');
    const count = alice.page.getByTestId('compose-count');
    await box.fill('x'.repeat(5000));
    await alice.page.waitForTimeout(300);
    await box.press('Enter');
    await alice.page.waitForTimeout(1000);
    await shot(alice.page, 'desktop', 'too-long');
    assert.equal((await box.inputValue()).length, 5000, 'the text left the composer');
    assert.equal(await alice.page.getByTestId('message-state').filter({ hasText: /not sent/ }).count(), 0, 'a "not sent" bubble');
    assert.equal(await alice.page.getByTestId('send').isDisabled(), true, 'send is enabled over the limit');
    await box.fill('x'.repeat(4000));
    await count.waitFor({ state: 'visible', timeout: WAIT });
    assert.match((await count.textContent()) ?? '', /4[ ,.]?000.*4[ ,.]?096/);
    assert.equal(await alice.page.getByTestId('send').isDisabled(), false);
    await box.fill('');
    await count.waitFor({ state: 'hidden', timeout: WAIT });
  });

  await t.test('delete asks first', async () => {
    await send(alice.page, 'delete me');
    const r = row(alice.page, 'delete me');
    // Read before the delete: once done, the row no longer says "delete me".
    const id = await r.getAttribute('data-id');
    assert.ok(id, 'the accepted row has no data-id');
    await r.hover();
    await r.getByTestId('delete').click();
    const confirm = r.getByTestId('delete-confirm');
    await confirm.waitFor({ timeout: WAIT });
    await shot(alice.page, 'desktop', 'delete-confirm');
    await r.getByTestId('delete-cancel').click();
    await alice.page.waitForTimeout(300);
    assert.equal(await r.getByTestId('message-body').textContent(), 'delete me', 'cancel deleted it');
    await r.hover();
    await r.getByTestId('delete').click();
    await r.getByTestId('delete-confirm').click();
    await alice.page.locator(`[data-testid="message"][data-id="${id}"]`).getByTestId('message-body').filter({ hasText: 'message deleted' }).waitFor({ timeout: WAIT });
  });

  await t.test('"read by" survives a reload', async () => {
    await row(alice.page, 'hi bob').getByTestId('message-state').filter({ hasText: 'read by bob' }).waitFor({ timeout: WAIT });
    await alice.page.reload();
    await alice.page.getByTestId('chat-title').filter({ hasText: 'bob' }).waitFor({ timeout: WAIT });
    await row(alice.page, 'how are you?').waitFor({ timeout: WAIT });
    await alice.page.mouse.move(0, 0);
    await alice.page.waitForTimeout(1000);
    await shot(alice.page, 'desktop', 'chat');
    await row(alice.page, 'how are you?').getByTestId('message-state').filter({ hasText: 'read by bob' }).waitFor({ timeout: 5000 });
  });

  await t.test('dark mode: emoji in a colour font, reaction chips readable', async () => {
    const failed = [];
    for (const [p, kind] of /** @type {const} */ ([[alice.page, 'desktop'], [bob.page, 'phone']])) {
      await p.emulateMedia({ colorScheme: 'dark' });
      try {
        await darkChecks(p, kind);
      } catch (err) {
        failed.push(err);
      } finally {
        await p.emulateMedia({ colorScheme: 'light' });
      }
    }
    if (failed.length) throw failed[0];
  });

  /** darkChecks: a picture, the emoji font, the chips' contrast. @param {import('playwright-core').Page} p @param {'desktop'|'phone'} kind */
  async function darkChecks(p, kind) {
    {
      const chip = row(p, 'hi bob').locator('[data-testid="reaction"]').first();
      await row(p, 'hi bob').waitFor({ timeout: WAIT });
      await p.mouse.move(0, 0);
      await p.waitForTimeout(300);
      await shot(p, kind, 'dark');
      await chip.waitFor({ timeout: WAIT });
      const font = await chip.evaluate((e) => getComputedStyle(e).fontFamily);
      assert.match(font, /Noto Color Emoji/, `chip font: ${font}`);
      const contrast = await chip.evaluate((e) => {
        const rgb = (/** @type {string} */ c) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
        const lum = (/** @type {number[]} */ [r, g, b]) => {
          const f = (/** @type {number} */ v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
          return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        let bg = 'rgba(0, 0, 0, 0)';
        for (let n = /** @type {Element|null} */ (e); n && /rgba\(.*, 0\)|transparent/.test(bg); n = n.parentElement) bg = getComputedStyle(n).backgroundColor;
        const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(rgb(bg))];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      });
      assert.ok(contrast >= 4.5, `chip text contrast ${contrast.toFixed(2)} in dark mode`);
    }
  }

  await t.test('the reconnect banner floats over the page, in words, counting down', async () => {
    const failed = [];
    for (const [who, kind] of /** @type {const} */ ([[alice, 'desktop'], [bob, 'phone']])) {
      const p = who.page;
      await who.context.setOffline(true);
      const banner = p.locator('[data-testid="banner"][data-state="reconnecting"]');
      await banner.waitFor({ timeout: WAIT });
      await p.waitForTimeout(2500);
      await shot(p, kind, 'reconnecting');
      try {
        await bannerChecks(p);
      } catch (err) {
        failed.push(err); // the other window's picture still gets taken
      } finally {
        await who.context.setOffline(false);
      }
      await p.getByTestId('banner').waitFor({ state: 'hidden', timeout: WAIT });
    }
    if (failed.length) throw failed[0];
  });

  /** bannerChecks: plain words, a countdown, over the page. @param {import('playwright-core').Page} p */
  async function bannerChecks(p) {
    {
      // Until the backoff is long enough to count down from.
      const seen = new Set();
      await until(async () => {
        const text = (await p.getByTestId('banner-text').textContent()) ?? '';
        assert.doesNotMatch(text, /\b1006\b|dial|closed|read timeout/i, `protocol words in the banner: ${text}`);
        const n = text.match(/Connection lost\. Reconnecting in (\d+) s…/);
        if (n) seen.add(Number(n[1]));
        return seen.size >= 2;
      }, 'a countdown of at least two values', 40_000);
      const pos = await p.getByTestId('banner').evaluate((e) => getComputedStyle(e).position);
      assert.ok(pos === 'fixed' || pos === 'absolute', `banner position ${pos}`);
      const box = await p.getByTestId('composer').boundingBox();
      const vh = /** @type {{height: number}} */ (p.viewportSize()).height;
      assert.ok(box && box.y + box.height <= vh + 0.5, `composer ends at ${box && box.y + box.height}, below the ${vh}px screen`);
    }
  }

  assert.deepEqual([...alice.errors, ...bob.errors].map(String), [], 'errors on the pages');
  await alice.context.close();
  await bob.context.close();
});
