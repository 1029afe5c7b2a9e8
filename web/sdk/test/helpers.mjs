// Test helpers: a real chatd in embedded mode, tokens from `chatd token`, a
// TCP proxy that cuts connections, and a recorder of what a client hands out.
import { spawn, execFile } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';

const run = promisify(execFile);

/** chatdEnv is the environment without CHATD_* settings of the caller's shell (a secret, a database URL). */
function chatdEnv() {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CHATD_') && k !== 'CHATD_BIN') delete env[k];
  return env;
}

/** freePort asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = /** @type {net.AddressInfo} */ (srv.address());
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * startChatd starts the chatd binary (CHATD_BIN) in embedded mode on a fresh
 * data dir and a free port, and waits until /readyz answers 200.
 * @param {string[]} [flags] extra flags, e.g. ['--lease', '500ms']
 */
export async function startChatd(flags = []) {
  const bin = process.env.CHATD_BIN;
  assert.ok(bin, 'CHATD_BIN is not set: run the tests with `npm test` (test/run.mjs builds chatd)');
  const dir = await mkdtemp(join(tmpdir(), 'chatd-sdk-'));
  // mkdtemp makes it 0700; run as root, chatd's PostgreSQL (the postgres
  // user) could not enter it and would keep its cluster under /var/lib/chatd,
  // out of reach of the cleanup below.
  await chmod(dir, 0o755);
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const proc = spawn(bin, ['--data-dir', dir, '--listen', addr, '--log-level', 'warn', ...flags], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: chatdEnv(),
  });
  let log = '';
  proc.stderr.on('data', (d) => (log = (log + d).slice(-20000)));
  const exited = new Promise((r) => proc.once('exit', r));
  // If the runner exits without its after hooks (a timeout, an uncaught
  // error), chatd still gets its SIGTERM and stops its PostgreSQL.
  const onExit = () => proc.kill('SIGTERM');
  process.once('exit', onExit);
  const url = `http://${addr}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`chatd exited with ${proc.exitCode}:\n${log}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`chatd not ready after 60 s:\n${log}`);
    await sleep(100);
  }
  return {
    url,
    port,
    dir,
    /** token prints a token for user with `chatd token`. */
    async token(user, { device, ttl } = {}) {
      const args = ['token', user, '--data-dir', dir];
      if (device) args.push('--device', device);
      if (ttl) args.push('--ttl', ttl);
      const { stdout } = await run(bin, args, { env: chatdEnv() });
      return stdout.trim();
    },
    /** metric sums every series of a Prometheus metric. */
    async metric(name) {
      const text = await (await fetch(`${url}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return sum;
    },
    log: () => log,
    /** stop ends chatd with SIGTERM (so it stops its PostgreSQL) and removes its data. */
    async stop() {
      process.off('exit', onExit);
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 15000);
        await exited;
        clearTimeout(t);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * startProxy forwards 127.0.0.1:<port> to target; cut() drops every open
 * connection at once (both ways), and refuse(true) makes it drop new ones on
 * accept, as a network that is down.
 * @param {number} targetPort
 */
export async function startProxy(targetPort) {
  /** @type {Set<net.Socket>} */
  const socks = new Set();
  let refusing = false;
  let cuts = 0;
  const srv = net.createServer((c) => {
    if (refusing) return c.destroy();
    const u = net.connect(targetPort, '127.0.0.1');
    socks.add(c);
    socks.add(u);
    const drop = () => {
      c.destroy();
      u.destroy();
      socks.delete(c);
      socks.delete(u);
    };
    c.on('error', drop).on('close', drop);
    u.on('error', drop).on('close', drop);
    c.pipe(u);
    u.pipe(c);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = /** @type {net.AddressInfo} */ (srv.address());
  return {
    url: `http://127.0.0.1:${port}`,
    get cuts() {
      return cuts;
    },
    cut() {
      cuts++;
      for (const s of socks) s.destroy();
      socks.clear();
    },
    /** @param {boolean} on */
    refuse(on) {
      refusing = on;
    },
    async close() {
      this.cut();
      await new Promise((r) => srv.close(r));
    },
  };
}

/**
 * record subscribes to c and keeps what it hands out: messages per chat in
 * the order given, updates, state changes, receipts, typing, presence.
 * @param {import('../src/index.js').ChatClient} c
 */
export function record(c) {
  const r = {
    /** @type {Map<string, any[]>} */
    msgs: new Map(),
    /** @type {any[]} */
    events: [],
    /** @type {any[]} */
    updates: [],
    /** @type {any[]} */
    states: [],
    /** @type {any[]} */
    receipts: [],
    /** @type {any[]} */
    typing: [],
    /** @type {any[]} */
    presence: [],
    /** @type {any[]} */
    errors: [],
    /** @param {string} chat */
    of(chat) {
      return r.msgs.get(chat) ?? [];
    },
  };
  c.on('message', (m) => {
    if (!r.msgs.has(m.chat)) r.msgs.set(m.chat, []);
    r.msgs.get(m.chat).push(m);
  });
  c.on('event', (e) => r.events.push(e));
  c.on('update', (u) => r.updates.push(u));
  c.on('state', (s) => r.states.push(s));
  c.on('receipt', (x) => r.receipts.push(x));
  c.on('typing', (x) => r.typing.push(x));
  c.on('presence', (x) => r.presence.push(x));
  c.on('error', (e) => r.errors.push(e));
  return r;
}

/**
 * checkLog asserts that events (everything a client handed out for one chat,
 * 'event' listener order) are seqs from..to exactly once each, in order.
 */
export function checkSeqs(events, from, to) {
  const seqs = events.map((e) => e.seq);
  const want = [];
  for (let s = from; s <= to; s++) want.push(s);
  assert.deepEqual(seqs, want, `handed out seqs ${compact(seqs)}, want ${from}..${to} once each in order`);
  assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'an id was handed out twice');
}

function compact(seqs) {
  return seqs.length > 30 ? `${seqs.slice(0, 15)},…,${seqs.slice(-15)} (${seqs.length})` : `${seqs}`;
}

/** waitFor polls cond until it is true, or fails after ms with what(). */
export async function waitFor(cond, ms, what = () => '') {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what()}`);
    await sleep(20);
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Fast options for test clients: short ack window and backoff. */
// A dial through the proxy that is cut before the upgrade's answer gives
// Node 20's WebSocket no event at all: only the dial timeout ends it.
export const fast = { ackDelayMs: 10, backoff: { minMs: 20, maxMs: 300 }, dialTimeoutMs: 2000 };

/**
 * stallable returns a WebSocket class whose incoming frames and close are
 * held while ctl.stalled: the app's thread stops reading, as a browser tab
 * that freezes. Releasing plays them back in order.
 */
export function stallable() {
  const ctl = {
    stalled: false,
    /** @type {(() => void)[]} */
    held: [],
    resume() {
      ctl.stalled = false;
      for (const fn of ctl.held.splice(0)) fn();
    },
  };
  class StallWS {
    /** @param {string} url */
    constructor(url) {
      this.ws = new WebSocket(url);
      this.onmessage = null;
      this.onclose = null;
      this.onerror = null;
      const pass = (fn) => (ctl.stalled ? ctl.held.push(fn) : fn());
      this.ws.onmessage = (e) => pass(() => this.onmessage?.(e));
      this.ws.onclose = (e) => pass(() => this.onclose?.(e));
      this.ws.onerror = (e) => this.onerror?.(e);
    }
    get readyState() {
      return this.ws.readyState;
    }
    send(d) {
      this.ws.send(d);
    }
    close(code, reason) {
      this.ws.close(code, reason);
    }
  }
  return { ctl, WebSocket: /** @type {any} */ (StallWS) };
}
