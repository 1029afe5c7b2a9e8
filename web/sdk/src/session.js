// One WebSocket connection from dial to close (pkg/client/session.go): it
// reads frames, acks deliveries in batches, pings, refreshes the token
// in-band, and runs the history syncer. The client owns the state that lives
// across sessions (tracker, pending sends); a session only borrows it.

import { Syncer } from './syncer.js';
import { tokenExp } from './token.js';

/** A session must stay up this long after hello for the next reconnect to start from the shortest backoff. */
export const stableAfterMs = 1000;
const closeWaitMs = 1000;
const refreshShare = 0.8;

/**
 * @typedef {{code: number, reason: string, opened: boolean, upForMs: number, unauthorized?: boolean}} SessionEnd
 */

export class Session {
  /**
   * @param {import('./client.js').ChatClient} client
   * @param {WebSocket} ws
   * @param {string} token the token the connection was opened with
   */
  constructor(client, ws, token) {
    this.c = client;
    this.ws = ws;
    this.token = token;
    this.open = false; // hello received
    this.ended = false;
    this.user = '';
    this.device = '';
    this.credits = Infinity;
    /** @type {Map<string, number>} cid → sends on this connection holding a credit */
    this.inflight = new Map();
    this.held = 0;
    /** @type {string[]} */
    this.ackIDs = [];
    this.maxAckIDs = 1000;
    this.ackTimer = undefined;
    this.timers = new Set();
    this.lastRx = Date.now();
    this.openedAt = 0;
    /** @type {Set<() => void>} woken when the session ends */
    this.onEnd = new Set();
    /** @type {((exp: number) => void) | undefined} */
    this.authedWaiter = undefined;
    this.syncer = new Syncer(this);
    /** @type {Promise<0>} resolves (to 0) when the session ends */
    this.whenEnded = new Promise((resolve) => this.onEnd.add(() => resolve(0)));
    /** @type {Promise<SessionEnd>} */
    this.done = new Promise((resolve) => (this._resolveDone = resolve));

    ws.onmessage = (e) => this._onData(e.data);
    ws.onclose = (e) => this._end(e.code ?? 0, e.reason ?? '');
    // Browsers follow an error with a close event; Node 20's WebSocket does
    // not when the dial fails, so a failed dial ends the session here.
    ws.onerror = () => {
      if (!this.open) this.abort(1006, 'dial failed');
    };
    // A dial may also hang without any event (a connection dropped before
    // the upgrade's answer, in Node 20): the dial timeout ends it.
    this._timeout(() => {
      if (!this.open) this.abort(0, 'no hello within the dial timeout');
    }, client._dialTimeout);
  }

  /** _timeout runs fn after ms unless the session ends first. */
  _timeout(fn, ms) {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.ended) fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  /** sleep resolves true after ms, or false as soon as the session ends. @param {number} ms */
  sleep(ms) {
    if (this.ended) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t);
        this.timers.delete(t);
        this.onEnd.delete(wake);
        resolve(false);
      };
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.onEnd.delete(wake);
        resolve(!this.ended);
      }, Math.max(0, ms));
      this.timers.add(t);
      this.onEnd.add(wake);
    });
  }

  /**
   * write sends one frame; false when the connection cannot take it (it is
   * ending: what was not answered is resent on the next one).
   * @param {object} frame
   */
  write(frame) {
    if (this.ended || this.ws.readyState !== 1) return false;
    try {
      this.ws.send(JSON.stringify(frame));
      return true;
    } catch (err) {
      this.abort(0, `write: ${err?.message ?? err}`);
      return false;
    }
  }

  // --- credits (hello's `credits`: sends that may await their answer at once)

  hasCredit() {
    let n = 0;
    for (const k of this.inflight.values()) n += k;
    return n < this.credits;
  }

  /** @param {string} cid */
  take(cid) {
    this.inflight.set(cid, (this.inflight.get(cid) ?? 0) + 1);
  }

  /** release returns the credit a send of cid held, when the server answers it. @param {string} cid */
  release(cid) {
    const n = this.inflight.get(cid);
    if (n === undefined) return;
    if (n <= 1) this.inflight.delete(cid);
    else this.inflight.set(cid, n - 1);
  }

  // --- acks (duty 1): the first id of a batch starts a window of ackDelay;
  // a batch that reaches maxAckIDs is flushed at once so a frame stays
  // under the server's max_frame_bytes.

  /** @param {string} id */
  ack(id) {
    this.ackIDs.push(id);
    if (this.ackIDs.length >= this.maxAckIDs) this.flushAcks();
    else if (this.ackIDs.length === 1) this.ackTimer = this._timeout(() => this.flushAcks(), this.c._ackDelay);
  }

  flushAcks() {
    clearTimeout(this.ackTimer);
    this.timers.delete(this.ackTimer);
    while (this.ackIDs.length) {
      const ids = this.ackIDs.splice(0, this.maxAckIDs);
      if (!this.write({ type: 'ack', ids })) return;
    }
  }

  // --- reading

  /** @param {unknown} data */
  _onData(data) {
    if (this.ended) return;
    this.lastRx = Date.now();
    let f;
    try {
      f = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(/** @type {any} */ (data)));
    } catch {
      return; // an undecodable frame is skipped, as the Go client does
    }
    if (!this.open) {
      if (f?.type !== 'hello') this.abort(0, 'first frame is not hello');
      else this._onHello(f);
      return;
    }
    this.c._onFrame(this, f);
  }

  _onHello(f) {
    const lim = f.limits ?? {};
    this.open = true;
    this.openedAt = Date.now();
    this.user = f.user ?? '';
    this.device = f.device ?? '';
    if (lim.credits > 0) this.credits = lim.credits;
    if (lim.max_frame_bytes > 0) this.maxAckIDs = Math.max(1, Math.min(1000, Math.floor((lim.max_frame_bytes - 64) / 32)));
    const ping = lim.ping_interval_ms > 0 ? lim.ping_interval_ms : 10000;
    // Silence for several ping intervals means the path is gone: the server
    // pings us and answers our pings, so a live connection is never quiet.
    const readTimeout = Math.max(3 * ping, lim.idle_timeout_ms ?? 0);
    const tick = () => {
      if (Date.now() - this.lastRx > readTimeout) return this.abort(0, 'read timeout');
      this.write({ type: 'ping' });
      this._timeout(tick, ping);
    };
    this._timeout(tick, ping);
    this.c._onOpen(this);
    for (const worker of [() => this._refresh(), () => this.syncer.run()]) {
      worker().catch((err) => {
        // A worker that fails ends the session; the next one starts afresh.
        this.c._emit('error', err);
        this.abort(0, `session worker failed: ${err?.message ?? err}`);
      });
    }
  }

  // --- token refresh in-band (docs/protocol.md "Token lifetime on an open WebSocket")

  async _refresh() {
    const c = this.c;
    if (typeof c._opts.token !== 'function') return;
    let exp = tokenExp(this.token);
    let got = Date.now();
    while (exp && !this.ended) {
      const life = exp - got;
      const lead = c._opts.refreshBeforeMs;
      const due = lead > 0 ? exp - Math.min(lead, life / 2) : got + refreshShare * life;
      if (!(await this.sleep(due - Date.now()))) return;
      let tok;
      try {
        tok = await c._token();
      } catch (err) {
        c._emit('error', err);
      }
      if (this.ended) return;
      if (!tok || tok === this.token) {
        // Nothing new to refresh with: ask again, spread over what is left.
        if (!(await this.sleep(Math.min(Math.max((exp - Date.now()) / 4, 100), 5000)))) return;
        continue;
      }
      const asked = Date.now();
      const answered = new Promise((resolve) => (this.authedWaiter = resolve));
      if (!this.write({ type: 'auth', token: tok })) return;
      const newExp = await Promise.race([answered, this.whenEnded]);
      if (!newExp || this.ended) return;
      this.token = tok;
      exp = newExp * 1000;
      got = asked;
    }
  }

  /** @param {number} exp */
  onAuthed(exp) {
    const w = this.authedWaiter;
    this.authedWaiter = undefined;
    w?.(exp);
  }

  // --- ending

  /**
   * abort ends the session now, without waiting for the close handshake:
   * the path may be dead, and a browser may take minutes to notice.
   * @param {number} code @param {string} reason @param {boolean} [unauthorized]
   */
  abort(code, reason, unauthorized = false) {
    if (this.ended) return;
    this._detach();
    try {
      this.ws.close();
    } catch {
      // already closing
    }
    this._end(code, reason, unauthorized);
  }

  /**
   * shutdown closes cleanly (the client is closing): flush the acks, send a
   * normal close frame and give the server a second to answer it.
   */
  async shutdown() {
    if (this.ended) return this.done;
    if (!this.open) {
      this.abort(1000, 'client closing');
      return this.done;
    }
    this.flushAcks();
    try {
      this.ws.close(1000, 'client closing');
    } catch {
      this.abort(1000, 'client closing');
    }
    this._timeout(() => this.abort(1000, 'client closing'), closeWaitMs);
    return this.done;
  }

  _detach() {
    this.ws.onmessage = null;
    this.ws.onclose = null;
    this.ws.onerror = null;
  }

  _end(code, reason, unauthorized = false) {
    if (this.ended) return;
    this.ended = true;
    this._detach();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const woken = [...this.onEnd];
    this.onEnd.clear();
    for (const wake of woken) wake();
    const upForMs = this.open ? Date.now() - this.openedAt : 0;
    this.c._onSessionEnd(this);
    this._resolveDone({ code, reason, opened: this.open, upForMs, unauthorized: unauthorized || code === 4401 });
  }
}
