// Connections cut at random through a TCP proxy (WebSocket and REST alike)
// while two users send to each other: every message arrives (lost 0), none
// is handed out twice, each chat's log comes in seq order, and every send is
// answered once even though many were resent on a new connection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ChatClient, RejectedError } from '../src/index.js';
import { startChatd, startProxy, record, checkSeqs, waitFor, sleep, fast } from './helpers.mjs';

const N = Number(process.env.CHATD_SDK_CHAOS_N ?? 100); // messages each way

/** @type {Awaited<ReturnType<typeof startChatd>>} */
let srv;
/** @type {Awaited<ReturnType<typeof startProxy>>} */
let proxy;
/** @type {ChatClient[]} */
const clients = [];

before(async () => {
  srv = await startChatd();
  proxy = await startProxy(srv.port);
});
after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await proxy?.close();
  await srv?.stop();
});

/**
 * sendAll sends n bodies, a few at a time; a temporary refusal (overloaded,
 * rate_limited) is retried with the same cid, as the contract asks.
 */
async function sendAll(c, chat, prefix, n) {
  const ids = new Array(n);
  let next = 0;
  async function worker() {
    while (next < n) {
      const i = next++;
      // Paced, so the run spans many cuts rather than finishing between two.
      await sleep(10 + Math.random() * 40);
      const cid = `${prefix}-${i}-${Math.random().toString(36).slice(2)}`;
      for (;;) {
        try {
          ids[i] = (await c.send(chat, `${prefix} ${i}`, { cid })).id;
          break;
        } catch (err) {
          if (!(err instanceof RejectedError && err.temporary)) throw err;
          await sleep(50);
        }
      }
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  return ids;
}

test(`random cuts through a proxy: ${N} messages each way, lost 0, no duplicate, in order`, { timeout: 80000 }, async () => {
  const opts = { url: proxy.url, ...fast };
  const a = new ChatClient({ ...opts, token: await srv.token('kim') });
  const b = new ChatClient({ ...opts, token: await srv.token('lee') });
  clients.push(a, b);
  const ra = record(a), rb = record(b);
  await Promise.all([a.connect(), b.connect()]);
  const chat = (await a.directChat('lee')).id;

  let cutting = true;
  const cutter = (async () => {
    while (cutting) {
      await sleep(100 + Math.random() * 300);
      if (cutting) proxy.cut();
    }
  })();
  const [aIDs, bIDs] = await Promise.all([sendAll(a, chat, 'kim', N), sendAll(b, chat, 'lee', N)]);
  cutting = false;
  await cutter;

  const total = 2 * N;
  await waitFor(() => ra.of(chat).length >= total && rb.of(chat).length >= total, 30000,
    () => `kim has ${ra.of(chat).length}, lee has ${rb.of(chat).length} of ${total}`);
  await sleep(300);
  for (const [name, r] of [['kim', ra], ['lee', rb]]) {
    const got = r.of(chat);
    checkSeqs(got, 1, total);
    const have = new Set(got.map((m) => m.id));
    const lost = [...aIDs, ...bIDs].filter((id) => !have.has(id));
    assert.equal(lost.length, 0, `${name} lost ${lost.length}`);
  }
  // Own messages were counted from the accepted frames, in the same log.
  assert.deepEqual(ra.of(chat).map((m) => m.id), rb.of(chat).map((m) => m.id));
  const reconnects = (r) => r.states.filter((s) => s.state === 'open').length - 1;
  assert.ok(reconnects(ra) >= 3 && reconnects(rb) >= 3, `reconnects kim ${reconnects(ra)} lee ${reconnects(rb)} after ${proxy.cuts} cuts: the run did not test reconnects`);
  console.log(`# chaos: ${N} each way, ${proxy.cuts} cuts, reconnects kim ${reconnects(ra)} lee ${reconnects(rb)}, ` +
    `via history kim ${ra.events.filter((e) => e.via === 'history').length} lee ${rb.events.filter((e) => e.via === 'history').length}`);
});
