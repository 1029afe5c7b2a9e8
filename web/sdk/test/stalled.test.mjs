// A stalled reader (pkg/client's TestIntegrationStalledReaderRecovers): a
// client whose thread stops reading stops acking; chatd withdraws it (4000
// abandoned or 4001 overloaded), and once it reads again it reconnects and
// recovers every message from history, none twice, in order.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ChatClient } from '../src/index.js';
import { startChatd, record, checkSeqs, waitFor, sleep, fast, stallable } from './helpers.mjs';

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let srv;
/** @type {ChatClient[]} */
const clients = [];

before(async () => {
  srv = await startChatd(['--lease', '500ms', '--max-attempts', '2', '--max-pending', '5']);
});
after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await srv?.stop();
});

test('a stalled reader is cut, then recovers everything from history, no duplicates', { timeout: 60000 }, async () => {
  const a = new ChatClient({ url: srv.url, token: await srv.token('alice'), ...fast });
  const { ctl, WebSocket } = stallable();
  const d = new ChatClient({ url: srv.url, token: await srv.token('dave'), WebSocket, ...fast });
  clients.push(a, d);
  const rd = record(d);
  await Promise.all([a.connect(), d.connect()]);
  const chat = (await a.directChat('dave')).id;
  await a.send(chat, 'before the stall');
  await waitFor(() => rd.of(chat).length === 1, 5000);

  ctl.stalled = true;
  const ids = [];
  for (let i = 0; i < 40; i++) ids.push((await a.send(chat, `to a stalled reader ${i}`)).id);
  // The stalled client cannot see its close until it reads again, so the
  // server's side tells when it was withdrawn.
  await waitFor(async () => (await srv.metric('chatd_push_withdrawn_total')) > 0, 15000, () => 'never withdrawn');
  ctl.resume();

  await waitFor(() => rd.of(chat).length >= 41, 20000, () => `dave has ${rd.of(chat).length}`);
  await sleep(300);
  checkSeqs(rd.of(chat), 1, 41);
  assert.deepEqual(rd.of(chat).slice(1).map((m) => m.id), ids);
  const cut = rd.states.find((s) => s.state === 'reconnecting');
  assert.ok(cut && (cut.code === 4000 || cut.code === 4001), `want a 4000/4001 close, got ${JSON.stringify(rd.states)}`);
  assert.match(cut.meaning, /resyncing from history/);
  assert.ok(rd.events.some((e) => e.via === 'history'), 'the recovery should come from history');
});
