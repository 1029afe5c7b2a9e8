// chatd's webhooks verify with the Standard Webhooks specification's
// published libraries, called as docs/integrations.md shows a receiver: the
// whsec_ secret as given to chatd, the raw body, the request's headers. A
// real chatd posts to a node:http receiver here; the JavaScript library (npm
// standardwebhooks) and the Python one (PyPI standardwebhooks, run from the
// same release's source, which go.mod pins for the Go library) check every
// post, and must refuse a tampered body, so the check can fail. A second
// endpoint is signed with two secrets, as while one is rotated
// (docs/integrations.md, "Rotating a secret"): either verifies its posts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { ChatClient } from '../src/index.js';
import { startChatd, waitFor, fast } from './helpers.mjs';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const secret = newSecret();
// The rotating endpoint's secrets: the new one, and the old one its
// receiver may still verify with.
const rotated = newSecret();
const previous = newSecret();
/** @type {{body: Buffer, headers: Record<string, string>}[]} */
const posts = [];
/** @type {{body: Buffer, headers: Record<string, string>}[]} */
const rotatingPosts = [];
const receiver = createServer((req, res) => {
  /** @type {Buffer[]} */
  const parts = [];
  req.on('data', (b) => parts.push(b));
  req.on('end', () => {
    const list = req.url === '/rotating' ? rotatingPosts : posts;
    list.push({ body: Buffer.concat(parts), headers: /** @type {Record<string, string>} */ (req.headers) });
    res.writeHead(204).end();
  });
});

const confDir = mkdtempSync(join(tmpdir(), 'chatd-webhooks-conf-'));
/** @type {Awaited<ReturnType<typeof startChatd>>} */
let srv;
/** @type {ChatClient | undefined} */
let client;

before(async () => {
  await new Promise((ok) => receiver.listen(0, '127.0.0.1', () => ok(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (receiver.address());
  const config = join(confDir, 'chatd.yaml');
  writeFileSync(config, `webhooks:\n  - url: http://127.0.0.1:${port}/rotating\n    secret: [${rotated}, ${previous}]\n    events: [message]\n`);
  srv = await startChatd(['--webhook', `http://127.0.0.1:${port}/chatd-events`, '--webhook-secret', secret, '--config', config]);
});
after(async () => {
  await client?.close();
  await srv?.stop();
  receiver.close();
  rmSync(confDir, { recursive: true, force: true });
});

test('the Standard Webhooks libraries for JavaScript and Python verify what chatd posts', { timeout: 30000 }, async () => {
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

  const py = verifyInPython(secret, [...posts, { body: tampered, headers: mine.headers }]);
  assert.deepEqual(py.slice(0, -1), posts.map((p) => JSON.parse(p.body.toString()).type), 'the Python library');
  assert.match(py[py.length - 1], /^refused: WebhookVerificationError/, 'the Python library verified a tampered body');
});

test('while a secret is rotated, the old one and the new one each verify', { timeout: 30000 }, async () => {
  const wanda = new ChatClient({ url: srv.url, token: await srv.token('wanda'), ...fast });
  await wanda.connect();
  const chat = (await wanda.directChat('wendy')).id;
  const sent = await wanda.send(chat, 'under two keys');
  await wanda.close();
  const isMine = (/** @type {{body: Buffer}} */ p) => p.body.includes(sent.id);
  await waitFor(() => rotatingPosts.some(isMine), 20000, () => `${rotatingPosts.length} posts to /rotating, none for ${sent.id}`);
  const mine = /** @type {{body: Buffer, headers: Record<string, string>}} */ (rotatingPosts.find(isMine));
  assert.equal(mine.headers['webhook-signature'].split(' ').length, 2, `webhook-signature ${mine.headers['webhook-signature']}: want one signature per secret`);

  for (const [name, s] of [['the new secret', rotated], ['the old secret', previous]]) {
    const event = /** @type {any} */ (new Webhook(s).verify(mine.body, mine.headers));
    assert.equal(event.data.event.id, sent.id, name);
    const py = verifyInPython(s, [mine]);
    assert.deepEqual(py, ['chat.message'], `the Python library with ${name}`);
  }
  assert.throws(() => new Webhook(secret).verify(mine.body, mine.headers), /signature/i, 'a secret the endpoint does not have verified');
});

/**
 * verifyInPython runs docs/integrations.md's Python call on each post and
 * returns, per post, the verified event's type or why it was refused.
 * @param {string} key the whsec_ secret to verify with
 * @param {{body: Buffer, headers: Record<string, string>}[]} list
 */
function verifyInPython(key, list) {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  // go mod download fetches it if no Go build has yet, and says where it is.
  const mod = JSON.parse(execFileSync('go', ['mod', 'download', '-json', 'github.com/standard-webhooks/standard-webhooks/libraries'], { cwd: repo, encoding: 'utf8' })).Dir;
  const script = `
import base64, json, sys
from standardwebhooks.webhooks import Webhook
wh = Webhook(sys.argv[1])
out = []
for p in json.load(sys.stdin):
    try:
        out.append(wh.verify(base64.b64decode(p["body"]), dict(p["headers"]))["type"])
    except Exception as e:
        out.append("refused: %s: %s" % (type(e).__name__, e))
print(json.dumps(out))
`;
  const input = JSON.stringify(list.map((p) => ({ body: p.body.toString('base64'), headers: p.headers })));
  const r = spawnSync('python3', ['-c', script, key], { input, encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(mod, 'python') } });
  assert.equal(r.error, undefined, `run python3 (scripts/ensure-web.sh installs it): ${r.error}`);
  assert.equal(r.status, 0, `python3: ${r.stderr}`);
  return /** @type {string[]} */ (JSON.parse(r.stdout));
}
