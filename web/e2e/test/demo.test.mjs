// The demo app in a real headless Chromium against a real chatd: alice and
// bob, each in their own browser context, create a chat and talk; bob sees
// alice typing; an edit and a reaction show on both sides; bob goes offline
// (Chromium's network emulation) while alice sends 20, comes back, and sees
// all 20 exactly once, in the chat's seq order (the order alice's window
// shows too: sends in flight together may commit in another order than typed). A third window opens a chat from the URL
// fragment (#token=T&chat=ID) and pages its history upward; last, alice
// deletes a message and both windows show it deleted.
//
// Screenshots go to web/e2e/artifacts/: alice.png, bob.png and demo.png
// (both side by side; docs/demo.png, the README's picture, is a copy),
// bob-offline.png (the reconnect banner), alice-after.png, bob-after.png.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChatd, demoArgs } from '../lib/chatd.mjs';
import { launch } from '../lib/browser.mjs';

const artifacts = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const WAIT = 20_000;

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let chatd;
/** @type {import('playwright-core').Browser} */
let browser;

before(async () => {
  await mkdir(artifacts, { recursive: true });
  chatd = await startChatd({ args: demoArgs, logPath: join(artifacts, 'chatd.log') });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await chatd?.stop();
});

/**
 * signIn opens the demo in a new browser context and signs in by name
 * with the development login form.
 * @param {string} user @param {{width: number, height: number}} viewport
 */
async function signIn(user, viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err));
  await page.goto(`${chatd.base}/`);
  await page.getByTestId('dev-login-name').fill(user);
  await page.getByTestId('dev-login-name').press('Enter');
  await page.getByTestId('me').filter({ hasText: user }).waitFor({ timeout: WAIT });
  await page.locator('[data-testid="conn-state"][data-state="open"]').waitFor({ timeout: WAIT });
  return { context, page, errors };
}

/** row is the message row whose body has exactly text. @param {import('playwright-core').Page} page @param {string} text */
function row(page, text) {
  return page.getByTestId('message').filter({ has: page.getByTestId('message-body').getByText(text, { exact: true }) });
}

/** bodies lists the message bodies on screen, top to bottom. @param {import('playwright-core').Page} page */
function bodies(page) {
  return page.getByTestId('message-body').allTextContents();
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

test('alice and bob chat in two browsers; bob recovers 20 messages after going offline', async (t) => {
  const alice = await signIn('alice', { width: 1000, height: 720 });
  const bob = await signIn('bob', { width: 390, height: 720 }); // a phone's width
  let chat = '';
  /** @type {string[]} the 20 in their seq order */
  let burstOrder = [];

  await t.test('alice creates a direct chat with bob and says hi', async () => {
    await alice.page.getByTestId('new-chat-users').fill('bob');
    await alice.page.getByTestId('create-direct').click();
    await alice.page.getByTestId('chat-title').filter({ hasText: 'bob' }).waitFor({ timeout: WAIT });
    chat = new URLSearchParams(new URL(alice.page.url()).hash.slice(1)).get('chat') ?? '';
    assert.match(chat, /^[0-9A-Za-z_-]+$/, `chat id in the fragment, got ${alice.page.url()}`);

    await alice.page.getByTestId('compose').fill('hi bob');
    await alice.page.getByTestId('compose').press('Enter');
    await row(alice.page, 'hi bob').getByTestId('message-state').filter({ hasText: /^(accepted|read by bob)$/ }).waitFor({ timeout: WAIT });
  });

  await t.test('bob sees the chat with one unread, opens it, and alice sees it read', async () => {
    const item = bob.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`);
    await item.getByTestId('unread').filter({ hasText: '1' }).waitFor({ timeout: WAIT });
    await item.click();
    await row(bob.page, 'hi bob').waitFor({ timeout: WAIT });
    await row(alice.page, 'hi bob').getByTestId('message-state').filter({ hasText: 'read by bob' }).waitFor({ timeout: WAIT });
  });

  await t.test('bob answers and alice gets it live', async () => {
    await bob.page.getByTestId('compose').fill('hello alice');
    await bob.page.getByTestId('send').click();
    await row(alice.page, 'hello alice').waitFor({ timeout: WAIT });
    assert.deepEqual(await bodies(alice.page), ['hi bob', 'hello alice']);
    await until(async () => JSON.stringify(await bodies(bob.page)) === JSON.stringify(['hi bob', 'hello alice']), "bob's two messages");
  });

  await t.test('bob sees alice typing', async () => {
    // Over 3 s of keystrokes: the server passes one typing frame per chat
    // per 3 s, and alice's send a moment ago may have used this window.
    await alice.page.getByTestId('compose').pressSequentially('wait, let me th', { delay: 250 });
    await bob.page.getByTestId('typing').filter({ hasText: 'alice is typing…' }).waitFor({ timeout: WAIT });
    await alice.page.getByTestId('compose').fill('');
  });

  await t.test('alice edits her message; both see the edit', async () => {
    const mine = row(alice.page, 'hi bob');
    await mine.hover();
    await mine.getByTestId('edit').click();
    const input = alice.page.getByTestId('edit-input');
    await input.fill('hi bob, edited');
    await input.press('Enter');
    for (const p of [alice.page, bob.page]) {
      await row(p, 'hi bob, edited').getByTestId('edited').waitFor({ timeout: WAIT });
    }
    assert.equal(await row(bob.page, 'hi bob').count(), 0, 'bob still shows the old text');
  });

  await t.test('bob reacts; both see the reaction', async () => {
    const theirs = row(bob.page, 'hi bob, edited');
    await theirs.hover();
    await theirs.locator('[data-testid="react"][data-emoji="👍"]').click();
    for (const p of [alice.page, bob.page]) {
      await row(p, 'hi bob, edited').locator('[data-testid="reaction"][data-emoji="👍"]').filter({ hasText: '👍 1' }).waitFor({ timeout: WAIT });
    }
    const chip = row(alice.page, 'hi bob, edited').locator('[data-testid="reaction"]');
    assert.match((await chip.getAttribute('aria-label')) ?? '', /bob/);
  });

  await t.test('bob creates a group with alice and carol; alice sees it with one unread', async () => {
    await bob.page.getByTestId('back').click(); // a phone shows one pane at a time
    await bob.page.getByTestId('new-chat-users').fill('alice, carol');
    await bob.page.getByTestId('new-chat-title').fill('weekend');
    await bob.page.getByTestId('create-group').click();
    await bob.page.getByTestId('chat-title').filter({ hasText: 'weekend' }).waitFor({ timeout: WAIT });
    await bob.page.getByTestId('compose').fill('who is in for sunday?');
    await bob.page.getByTestId('compose').press('Enter');
    const group = alice.page.getByTestId('chat-item').filter({ hasText: 'weekend' });
    await group.getByTestId('unread').filter({ hasText: '1' }).waitFor({ timeout: WAIT });
    // alice still reads the direct chat; bob goes back to it.
    assert.equal(await alice.page.getByTestId('chat-title').textContent(), 'bob');
    await bob.page.getByTestId('back').click();
    await bob.page.locator(`[data-testid="chat-item"][data-chat="${chat}"]`).click();
    await row(bob.page, 'hi bob, edited').waitFor({ timeout: WAIT });
  });

  await t.test('screenshots of both windows', async () => {
    // alice is typing, so bob's window shows it too.
    await alice.page.getByTestId('compose').pressSequentially('see you at 8?', { delay: 120 });
    await bob.page.getByTestId('typing').filter({ hasText: 'alice is typing…' }).waitFor({ timeout: WAIT });
    for (const p of [alice.page, bob.page]) await p.mouse.move(0, 0); // no hover actions in the picture
    const a = await alice.page.screenshot({ path: join(artifacts, 'alice.png') });
    const b = await bob.page.screenshot({ path: join(artifacts, 'bob.png') });
    // Both windows side by side in one picture (docs/demo.png is a copy).
    const frame = await browser.newPage({ viewport: { width: 1000 + 390 + 48, height: 720 + 32 } });
    await frame.setContent(
      `<body style="margin:0;padding:16px;background:#c9ced6;display:flex;gap:16px;align-items:flex-start">` +
        `<img alt="alice" src="data:image/png;base64,${a.toString('base64')}" style="box-shadow:0 2px 8px #0004">` +
        `<img alt="bob" src="data:image/png;base64,${b.toString('base64')}" style="box-shadow:0 2px 8px #0004">` +
        `</body>`,
    );
    await frame.screenshot({ path: join(artifacts, 'demo.png') });
    await frame.close();
    await alice.page.getByTestId('compose').fill('');
  });

  await t.test('bob goes offline while alice sends 20; back online he has all 20 once, in order', async () => {
    const burst = Array.from({ length: 20 }, (_, i) => `burst ${String(i + 1).padStart(2, '0')}`);
    const before = await bob.page.evaluate(() => window.chatdDemo.handedOut.length);

    await bob.context.setOffline(true);
    // The connection is really gone: the SDK noticed and the banner says so.
    await bob.page.locator('[data-testid="banner"][data-state="reconnecting"]').waitFor({ timeout: WAIT });
    const text = await bob.page.getByTestId('banner-text').textContent();
    assert.match(text ?? '', /Reconnecting/);

    for (const b of burst) {
      await alice.page.getByTestId('compose').fill(b);
      await alice.page.getByTestId('compose').press('Enter');
    }
    for (const b of burst) {
      await row(alice.page, b).getByTestId('message-state').filter({ hasText: 'accepted' }).waitFor({ timeout: WAIT });
    }
    assert.equal(await row(bob.page, 'burst 01').count(), 0, 'bob got a message while offline');
    await bob.page.screenshot({ path: join(artifacts, 'bob-offline.png') });

    await bob.context.setOffline(false);
    await bob.page.getByTestId('banner').waitFor({ state: 'hidden', timeout: WAIT });
    await row(bob.page, 'burst 20').waitFor({ timeout: WAIT });

    // Order is the chat's seq order, which is the server's commit order:
    // sends in flight together may commit in another order than typed, and
    // alice's window shows them by seq too. Both windows must agree, with
    // every message once.
    const seen = await bodies(alice.page);
    burstOrder = seen.filter((b) => b.startsWith('burst '));
    assert.deepEqual([...burstOrder].sort(), burst, 'alice shows each of the 20 once');
    assert.deepEqual(seen, ['hi bob, edited', 'hello alice', ...burstOrder]);
    const shown = await bodies(bob.page);
    assert.deepEqual(shown, seen, "bob's window differs from alice's");
    // From the SDK: each of the 20 handed out exactly once, in seq order.
    const got = await bob.page.evaluate((n) => window.chatdDemo.handedOut.slice(n), before);
    const mine = got.filter((m) => m.chat === chat && m.body.startsWith('burst '));
    assert.deepEqual(mine.map((m) => m.body), burstOrder, 'handed out once each, in seq order');
    for (let i = 1; i < mine.length; i++) assert.ok(mine[i].seq === mine[i - 1].seq + 1, `seqs ${mine[i - 1].seq}, ${mine[i].seq} at ${i}`);
    assert.equal(new Set(got.map((m) => m.id)).size, got.length, 'an id handed out twice');
    // And bob's read reached alice.
    await row(alice.page, 'burst 20').getByTestId('message-state').filter({ hasText: 'read by bob' }).waitFor({ timeout: WAIT });
    await alice.page.screenshot({ path: join(artifacts, 'alice-after.png') });
    await bob.page.screenshot({ path: join(artifacts, 'bob-after.png') });
  });

  await t.test('#token=T&chat=ID opens the chat with history, and scrolling up pages older messages', async () => {
    // More than one page (30), sent over REST as alice.
    const tok = await chatd.token('alice'); // the CLI's token, not the dev login's
    for (let i = 1; i <= 35; i++) {
      const resp = await fetch(`${chatd.base}/api/chats/${chat}/messages`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${tok}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ cid: `rest-${i}`, body: `rest ${String(i).padStart(2, '0')}` }),
      });
      assert.equal(resp.status, 201, await resp.text());
    }
    const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
    const page = await context.newPage();
    await page.goto(`${chatd.base}/#token=${tok}&chat=${chat}`);
    await page.getByTestId('chat-title').filter({ hasText: 'bob' }).waitFor({ timeout: WAIT });
    await row(page, 'rest 35').waitFor({ timeout: WAIT });
    assert.doesNotMatch(page.url(), /token=/, 'the token stays in the address bar');
    assert.equal(await row(page, 'hi bob, edited').count(), 0, 'the first page already holds the oldest message');

    // Scroll to the top until the start of the conversation.
    await until(async () => {
      await page.getByTestId('scroller').evaluate((s) => s.scrollTo(0, 0));
      return page.getByTestId('history-start').isVisible();
    }, 'the start of the conversation');
    const all = await bodies(page);
    const rest = Array.from({ length: 35 }, (_, i) => `rest ${String(i + 1).padStart(2, '0')}`);
    assert.deepEqual(all, ['hi bob, edited', 'hello alice', ...burstOrder, ...rest]);
    const seqs = await page.getByTestId('message').evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
    for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1], `rows out of seq order at ${i}: ${seqs}`);
    await context.close();
  });

  await t.test('alice deletes a message; both see it deleted', async () => {
    // 'rest 35' came from alice's other device (the REST calls above), so
    // it is hers to delete here too.
    const mine = row(alice.page, 'rest 35');
    await mine.waitFor({ timeout: WAIT });
    const id = await mine.getAttribute('data-id');
    await mine.hover();
    await mine.getByTestId('delete').click();
    await mine.getByTestId('delete-confirm').click(); // the demo asks first
    for (const p of [alice.page, bob.page]) {
      const gone = p.locator(`[data-testid="message"][data-id="${id}"]`);
      await gone.getByTestId('message-body').filter({ hasText: 'message deleted' }).waitFor({ timeout: WAIT });
      assert.equal(await gone.getByTestId('edit').count(), 0, 'a deleted message offers edit');
    }
  });

  assert.deepEqual([...alice.errors, ...bob.errors].map(String), [], 'errors on the pages');
  await alice.context.close();
  await bob.context.close();
});
