// chatd's webhooks verify with the Standard Webhooks specification's
// published JavaScript library (npm standardwebhooks), called as
// docs/integrations.md shows a receiver: the whsec_ secret as given to
// chatd, the raw body, the request's headers. A real chatd posts to a
// node:http receiver here; a tampered body must be refused, so the check
// can fail.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ChatClient } from '../src/index.js';
import { startChatd, waitFor, fast } from './helpers.mjs';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
/** @type {{body: Buffer, headers: Record<string, string>}[]} */
const posts = [];
const receiver = createServer((req, res) => {
  /** @type {Buffer[]} */
  const parts = [];
  req.on('data', (b) => parts.push(b));
  req.on('end', () => {
    posts.push({ body: Buffer.concat(parts), headers: /** @type {Record<string, string>} */ (req.headers) });
    res.writeHead(204).end();
  });
});

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let srv;
/** @type {ChatClient | undefined} */
let client;

before(async () => {
  await new Promise((ok) => receiver.listen(0, '127.0.0.1', () => ok(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (receiver.address());
  srv = await startChatd(['--webhook', `http://127.0.0.1:${port}/chatd-events`, '--webhook-secret', secret]);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  receiver.close();
});

test('the standardwebhooks npm package verifies what chatd posts', { timeout: 30000 }, async () => {
  client = new ChatClient({ url: srv.url, token: await srv.token('wanda'), ...fast });
  await client.connect();
  const chat = (await client.directChat('walt')).id;
  const sent = await client.send(chat, 'signed, sealed, delivered');
  const isMine = (/** @type {{body: Buffer}} */ p) => p.body.includes(sent.id);
  await waitFor(() => posts.some(isMine), 20000, () => `${posts.length} posts, none for ${sent.id}`);

  const wh = new Webhook(secret);
  for (const p of posts) {
    const event = /** @type {any} */ (wh.verify(p.body, p.headers));
    assert.ok(event.type?.startsWith('chat.'), `event type ${event.type}`);
  }
  const mine = /** @type {{body: Buffer, headers: Record<string, string>}} */ (posts.find(isMine));
  const event = /** @type {any} */ (wh.verify(mine.body, mine.headers));
  assert.equal(event.type, 'chat.message');
  assert.equal(event.data.event.id, sent.id);
  assert.equal(event.data.event.body, 'signed, sealed, delivered');
  assert.equal(event.data.seq, sent.seq);

  const tampered = Buffer.from(mine.body.toString().replace('sealed', 'opened'));
  assert.throws(() => wh.verify(tampered, mine.headers), /signature/i, 'a tampered body verified');
  const other = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
  assert.throws(() => other.verify(mine.body, mine.headers), /signature/i, 'another secret verified');
});
