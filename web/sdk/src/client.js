// ChatClient: a chatd connection that keeps the client's side of the wire
// contract (docs/protocol.md "The client's side of the bargain"), ported
// from the Go client (pkg/client):
//
//  1. every `msg` frame is acked by id, duplicates included, batched within
//     ackDelayMs into one `ack` frame;
//  2. events are deduplicated by chat and seq across live delivery and
//     history, and the highest contiguous seq of each chat is the resume point;
//  3. after every `hello` each tracked chat's history is pulled from that
//     resume point (after_seq) to the end and merged with live frames by seq;
//     a live frame beyond a gap waits until the gap is filled, and a gap not
//     filled live within gapWaitMs is fetched from history;
//  4. an unanswered send (or edit, delete, react) is resent with the same cid
//     on the next connection;
//  5. the connection is re-established with exponential backoff and full
//     jitter after any close, except 4003 (superseded) and a token refused
//     again after a fresh one was fetched.
//
// The app sees each chat's messages exactly once, in seq order, with their
// current state (edits, deletes and reactions applied), its own accepted
// sends included.

import { Emitter } from './emitter.js';
import { Tracker } from './tracker.js';
import { Store, toEvent, toMessage, applyEvent, copyMessage } from './state.js';
import { Rest, pageUp } from './rest.js';
import { Session, stableAfterMs } from './session.js';
import { backoffDelay } from './backoff.js';
import { tokenSub } from './token.js';
import { APIError, ClosedError, RejectedError, TokenError, closeMeaning } from './errors.js';

/** @typedef {import('../index.js').ChatClientOptions} ChatClientOptions */
/** @typedef {import('../index.js').Accepted} Accepted */
/** @typedef {import('../index.js').ConnState} ConnState */

/**
 * @typedef {object} Pending a send or event frame waiting for its answer, across reconnects
 * @property {string} cid
 * @property {string} chat
 * @property {any} frame
 * @property {Session | undefined} writtenOn
 * @property {Promise<Accepted>} promise
 * @property {(a: Accepted) => void} resolve
 * @property {(e: Error) => void} reject
 */

const kindOf = { send: undefined, edit: 'edit', delete: 'delete', react: 'reaction' };

export class ChatClient extends Emitter {
  /** @param {ChatClientOptions} opts */
  constructor(opts) {
    super();
    if (!opts || typeof opts.url !== 'string') throw new TypeError('ChatClient: url is required');
    if (typeof opts.token !== 'string' && typeof opts.token !== 'function') throw new TypeError('ChatClient: token is required');
    this._opts = opts;
    const { rest, ws } = endpoints(opts.url);
    this._restBase = rest;
    this._wsURL = ws;
    this._WS = opts.WebSocket ?? globalThis.WebSocket;
    if (!this._WS) throw new TypeError('ChatClient: no WebSocket (Node 20 needs --experimental-websocket, or pass opts.WebSocket)');
    const f = opts.fetch ?? globalThis.fetch;
    this._fetch = (/** @type {any} */ url, /** @type {any} */ init) => f(url, init);
    this._backoffMin = opts.backoff?.minMs ?? 100;
    this._backoffMax = opts.backoff?.maxMs ?? 10000;
    this._ackDelay = opts.ackDelayMs ?? 50;
    this._gapWait = opts.gapWaitMs ?? 200;
    this._dialTimeout = opts.dialTimeoutMs ?? 10000;
    this._connectTimeout = opts.connectTimeoutMs ?? 30000;
    /** @type {string | undefined} why the last dial failed, for connect()'s time-out error */
    this._lastFailure = undefined;
    this._trackAll = opts.trackAll ?? true;
    this._trackFrom = opts.trackFrom ?? 'start';
    if (!['start', 'now', 'unread'].includes(this._trackFrom)) throw new TypeError(`ChatClient: trackFrom ${this._trackFrom}, want start, now or unread`);
    /** whether trackAll has listed the chats once: chats listed later are new to this client, tracked from their start */
    this._listedOnce = false;
    /**
     * Live frames of chats not yet tracked, held until the first listing says
     * where each chat starts (trackFrom 'now' or 'unread'); otherwise a frame
     * arriving first would track its chat from 0 and replay its history.
     * @type {any[] | undefined}
     */
    this._early = this._trackAll && this._trackFrom !== 'start' ? [] : undefined;
    this._tracker = new Tracker();
    this._store = new Store(opts.maxKeptPerChat ?? 5000);
    this._rest = new Rest(() => this._restBase, () => this._token(), this._fetch);
    /** @type {Map<string, Pending>} */
    this._pending = new Map();
    /** @type {Session | undefined} the session that reached hello, while it lasts */
    this._sess = undefined;
    /** @type {Session | undefined} the session being dialled or run */
    this._current = undefined;
    /** @type {ConnState} */
    this._state = 'closed';
    this._running = false;
    this._stopped = true;
    /** @type {(() => void) | undefined} wakes the reconnect wait when closing */
    this._wakeLoop = undefined;
    /** @type {{promise: Promise<void>, resolve: () => void, reject: (e: Error) => void, settled: boolean} | undefined} */
    this._connecting = undefined;
    /** @type {Promise<void> | undefined} */
    this._loopDone = undefined;
    /** @type {ClosedError | undefined} why the client ended; sends until the next connect() fail with it */
    this._ended = undefined;
    for (const chat of opts.chats ?? []) this._tracker.track(chat, 0);
  }

  get state() {
    return this._state;
  }
  get user() {
    return this._user;
  }
  get device() {
    return this._device;
  }

  /** _token returns the token to present now. */
  async _token() {
    const t = this._opts.token;
    return typeof t === 'function' ? await t() : t;
  }

  // --- connection loop

  /**
   * connect starts connecting and keeps reconnecting; it resolves at the
   * first hello, and rejects when the client ends before that (close(), 4003,
   * a token refused for good), when the token function fails before the
   * first hello (TokenError), or when no hello came within connectTimeoutMs
   * (ClosedError, code 0). A client that rejected is closed: call connect()
   * again to retry.
   * @returns {Promise<void>}
   */
  connect() {
    if (this._running) return this._connecting?.promise ?? Promise.resolve();
    this._running = true;
    this._stopped = false;
    this._ended = undefined;
    /** @type {any} */
    const c = { settled: false };
    c.promise = new Promise((resolve, reject) => {
      c.resolve = resolve;
      c.reject = reject;
    });
    c.promise.catch(() => {}); // the loop settles it; an unobserved rejection is no crash
    this._connecting = c;
    if (this._connectTimeout > 0) {
      const t = setTimeout(() => this._giveUp(new ClosedError(`no connection within ${this._connectTimeout} ms${this._lastFailure ? `: ${this._lastFailure}` : ''}`, 0)), this._connectTimeout);
      c.promise.then(() => clearTimeout(t), () => clearTimeout(t));
    }
    this._setState({ state: 'connecting' });
    this._loopDone = this._loop().catch((err) => {
      // A bug, not a network failure: say so and end rather than spin.
      this._emit('error', err);
      this._finish(0, `client failed: ${err?.message ?? err}`);
    });
    return c.promise;
  }

  async _loop() {
    let attempt = 0;
    let refused = 0; // consecutive dials ending unauthorized
    while (!this._stopped) {
      const end = await this._connectOnce();
      if (this._stopped) break;
      this._lastFailure = end.reason;
      if (end.token !== undefined && !this._connecting?.settled) return this._giveUp(new TokenError(end.token));
      if (end.opened) refused = 0;
      if (end.code === 4003) return this._finish(end.code, end.reason);
      if (end.unauthorized) {
        refused++;
        // A fixed token will not get better; a token function gets one more
        // chance with a fresh token (a session closed at exp, 4401).
        if (typeof this._opts.token !== 'function' || refused >= 2) return this._finish(4401, end.reason || 'token refused');
      }
      if (end.upForMs >= stableAfterMs) attempt = 0;
      const d = backoffDelay(attempt++, this._backoffMin, this._backoffMax);
      const meaning = end.token !== undefined ? 'could not get a token; retrying' : closeMeaning(end.code);
      this._setState({ state: 'reconnecting', code: end.code, reason: end.reason, meaning, retryInMs: d });
      await new Promise((resolve) => {
        const t = setTimeout(done, d);
        function done() {
          clearTimeout(t);
          resolve(undefined);
        }
        this._wakeLoop = done;
      });
      this._wakeLoop = undefined;
    }
  }

  /** _connectOnce dials, runs one session to its end, and says how it ended. */
  async _connectOnce() {
    let tok;
    try {
      tok = await this._token();
      if (!tok) throw new Error('it returned no token');
    } catch (err) {
      return { code: 0, reason: `token: ${err?.message ?? err}`, token: err, opened: false, upForMs: 0 };
    }
    if (this._stopped) return { code: 1000, reason: 'client closing', opened: false, upForMs: 0 };
    let ws;
    try {
      ws = new this._WS(`${this._wsURL}?token=${encodeURIComponent(tok)}`);
    } catch (err) {
      return { code: 0, reason: `dial: ${err?.message ?? err}`, opened: false, upForMs: 0 };
    }
    const s = new Session(this, ws, tok);
    this._current = s;
    const end = await s.done;
    this._current = undefined;
    if (!end.opened && !end.unauthorized && !this._stopped) {
      // A browser WebSocket hides the HTTP status of a refused upgrade;
      // ask REST whether it was the token.
      end.unauthorized = await this._refusedToken(tok);
    }
    if (!end.reason && end.unauthorized) end.reason = 'token refused';
    return end;
  }

  /** _refusedToken reports whether chatd answers tok with 401. @param {string} tok */
  async _refusedToken(tok) {
    try {
      const sub = tokenSub(tok) || 'x';
      const resp = await this._fetch(`${this._restBase}/api/presence?users=${encodeURIComponent(sub)}`, {
        headers: { Authorization: `Bearer ${tok}` },
      });
      await resp.text();
      return resp.status === 401;
    } catch {
      return false;
    }
  }

  /** _onOpen: s reached hello; it becomes the session sends and acks use. @param {Session} s */
  _onOpen(s) {
    this._sess = s;
    this._user = s.user;
    this._device = s.device;
    this._setState({ state: 'open', user: s.user, device: s.device });
    if (this._connecting && !this._connecting.settled) {
      this._connecting.settled = true;
      this._connecting.resolve();
    }
    this._pump();
  }

  /** @param {Session} s */
  _onSessionEnd(s) {
    if (this._sess === s) this._sess = undefined;
  }

  /**
   * _giveUp ends a client that never reached hello, rejecting connect()
   * with err: a token function that fails, or no hello in time.
   * @param {Error} err
   */
  _giveUp(err) {
    if (!this._running || this._connecting?.settled) return;
    this._stopped = true;
    this._wakeLoop?.();
    this._current?.shutdown();
    this._finish(0, err.message, err, err instanceof TokenError ? 'could not get a token' : 'could not connect');
  }

  /** _finish ends the client for good with a close code (err and meaning: see _giveUp). */
  _finish(code, reason, err = undefined, meaning = closeMeaning(code)) {
    this._stopped = true;
    this._running = false;
    err ??= new ClosedError(`client closed: ${code} ${meaning}${reason ? `: ${reason}` : ''}`, code);
    this._ended = err;
    this._rejectAll(err);
    if (this._connecting && !this._connecting.settled) {
      this._connecting.settled = true;
      this._connecting.reject(err);
    }
    this._setState({ state: 'closed', code, reason, meaning });
  }

  _rejectAll(err) {
    const all = [...this._pending.values()];
    this._pending.clear();
    for (const p of all) p.reject(err);
  }

  /**
   * close closes the connection cleanly (acks flushed, a normal close frame)
   * and stops reconnecting; pending sends reject with ClosedError.
   */
  async close() {
    if (!this._running) {
      this._ended ??= new ClosedError();
      this._rejectAll(this._ended);
      return;
    }
    this._stopped = true;
    this._wakeLoop?.();
    await this._current?.shutdown();
    await this._loopDone;
    this._finish(1000, 'client closing');
  }

  /** @param {import('../index.js').StateEvent} ev */
  _setState(ev) {
    this._state = ev.state;
    this._emit('state', ev);
  }

  // --- frames

  /** _onFrame handles one frame of an open session. @param {Session} s @param {any} f */
  _onFrame(s, f) {
    switch (f.type) {
      case 'msg':
        // Ack duplicates too: the server counts the ack, not the message.
        if (f.id) s.ack(f.id);
        this._deliver([f], 'live');
        if (this._tracker.hasGap(f.chat)) s.syncer.request(f.chat, this._gapWait);
        return;
      case 'accepted':
        return this._onAccepted(s, f);
      case 'rejected':
        return this._onRejected(s, f);
      case 'receipt':
        return this._emit('receipt', { chat: f.chat, user: f.user, upto: f.upto, seq: f.seq ?? 0 });
      case 'typing':
        return this._emit('typing', { chat: f.chat, user: f.user });
      case 'presence':
        return this._emit('presence', f.last_seen ? { user: f.user, online: !!f.online, lastSeen: f.last_seen } : { user: f.user, online: !!f.online });
      case 'authed':
        return s.onAuthed(f.exp);
      default:
        // pong, and frames of newer servers: ignoring them keeps old clients working.
        return;
    }
  }

  /**
   * _onAccepted answers the waiting send and, since the server does not
   * deliver an event to the device that sent it, merges it itself so the
   * chat's seq stays contiguous.
   */
  _onAccepted(s, f) {
    s.release(f.cid);
    const p = this._pending.get(f.cid);
    if (p) {
      this._pending.delete(f.cid);
      const fr = p.frame;
      const raw = { id: f.id, cid: f.cid, chat: p.chat, from: s.user, body: fr.body ?? '', seq: f.seq, ts: f.ts };
      if (kindOf[fr.type]) raw.kind = kindOf[fr.type];
      if (fr.target) raw.target = fr.target;
      if (fr.type === 'react') Object.assign(raw, { emoji: fr.emoji, on: fr.on });
      if (fr.meta != null) raw.meta = fr.meta;
      const dup = this._deliver([raw], 'self') > 0;
      p.resolve({ id: f.id, seq: f.seq, cid: f.cid, chat: p.chat, ts: f.ts, status: dup ? 'duplicate' : 'accepted' });
      if (this._tracker.hasGap(p.chat)) s.syncer.request(p.chat, this._gapWait);
    }
    this._pump();
  }

  _onRejected(s, f) {
    const err = new RejectedError(f.cid ?? '', f.code ?? '', f.error ?? '');
    if (!f.cid) {
      this._emit('error', err); // a typing or read refused, or a malformed frame
      return;
    }
    s.release(f.cid);
    const p = this._pending.get(f.cid);
    if (p) {
      this._pending.delete(f.cid);
      p.reject(err);
    }
    this._pump();
  }

  /**
   * _deliver offers raw events to the tracker and hands out what becomes
   * ready, in order; it returns how many were duplicates.
   * @param {any[]} raws @param {'live'|'history'|'self'} via
   */
  _deliver(raws, via) {
    let dups = 0;
    for (const raw of raws) {
      if (via === 'live' && this._early && this._tracker.contiguous(raw.chat) === undefined) {
        this._early.push(raw);
        continue;
      }
      const { ready, dup } = this._tracker.add({ chat: raw.chat, seq: raw.seq, raw, via });
      if (dup) dups++;
      for (const e of ready) this._handOut(e.raw, e.via);
    }
    return dups;
  }

  /** _listed: the first listing set every chat's start; hand out the frames held for it. */
  _listed() {
    this._listedOnce = true;
    const early = this._early ?? [];
    this._early = undefined;
    this._deliver(early, 'live');
  }

  /** _handOut gives the app one event, in its chat's seq order, exactly once. */
  _handOut(raw, via) {
    const ev = toEvent(raw, via);
    this._store.noteSeq(ev);
    if (ev.kind === 'message') {
      const m = toMessage(raw);
      this._store.put(m);
      this._emit('event', ev);
      this._emit('message', copyMessage(m));
      return;
    }
    const m = ev.target ? this._store.get(ev.chat, ev.target) : undefined;
    if (m) applyEvent(m, ev);
    this._emit('event', ev);
    this._emit('update', { message: m && copyMessage(m), event: ev });
  }

  /**
   * _syncChat pulls chat's history after its resume point, page by page to
   * the end, and merges it. A page that starts above the seq asked for means
   * history no longer holds the seqs between (purged past retention): they
   * are skipped so the chat does not wait for them forever.
   * @param {string} chat @param {Session} s
   */
  async _syncChat(chat, s) {
    let after = this._tracker.contiguous(chat);
    if (after === undefined) return;
    for (;;) {
      const page = await this._rest.after(chat, after, 1000);
      if (!page.messages.length) return;
      const first = page.messages[0].seq;
      if (first > after + 1) {
        for (const e of this._tracker.skipTo(chat, first - 1)) this._handOut(e.raw, e.via);
      }
      this._deliver(page.messages, 'history');
      if (page.next == null || s.ended) return;
      after = page.messages[page.messages.length - 1].seq;
    }
  }

  // --- sends (duty 4)

  /**
   * _submit queues frame until answered, writing it on every new connection
   * (the server stores a cid once, so a resend never duplicates). A second
   * call with a cid still pending gets the same answer.
   * @returns {Promise<Accepted>}
   */
  _submit(frame) {
    if (!frame.chat) return Promise.reject(new TypeError(`${frame.type}: chat is required`));
    // Before connect() a send waits for the first connection; after the
    // client ended it would wait forever.
    if (this._ended) return Promise.reject(this._ended);
    const had = this._pending.get(frame.cid);
    if (had) return had.promise;
    /** @type {any} */
    const p = { cid: frame.cid, chat: frame.chat, frame, writtenOn: undefined };
    p.promise = new Promise((resolve, reject) => {
      p.resolve = resolve;
      p.reject = reject;
    });
    this._pending.set(frame.cid, p);
    this._pump();
    return p.promise;
  }

  /** _pump writes the pending frames the live session has not carried yet, within its credits. */
  _pump() {
    const s = this._sess;
    if (!s || s.ended) return;
    for (const p of this._pending.values()) {
      if (p.writtenOn === s) continue;
      if (!s.hasCredit()) return;
      s.take(p.cid);
      if (!s.write(p.frame)) return; // the connection is ending; the next one resends
      p.writtenOn = s;
    }
  }

  /**
   * @param {string} chat @param {string} body
   * @param {{meta?: object, cid?: string}} [opts]
   */
  send(chat, body, opts = {}) {
    const frame = { type: 'send', chat, cid: opts.cid || newCID(), body };
    if (opts.meta != null) frame.meta = opts.meta;
    return this._submit(frame);
  }

  /** @param {string} chat @param {string} mid @param {string} body @param {{cid?: string}} [opts] */
  edit(chat, mid, body, opts = {}) {
    return this._submit({ type: 'edit', chat, cid: opts.cid || newCID(), target: mid, body });
  }

  /** @param {string} chat @param {string} mid @param {{cid?: string}} [opts] */
  delete(chat, mid, opts = {}) {
    return this._submit({ type: 'delete', chat, cid: opts.cid || newCID(), target: mid });
  }

  /** @param {string} chat @param {string} mid @param {string} emoji @param {boolean} [on] @param {{cid?: string}} [opts] */
  react(chat, mid, emoji, on = true, opts = {}) {
    if (!emoji) return Promise.reject(new TypeError('react: emoji is required'));
    return this._submit({ type: 'react', chat, cid: opts.cid || newCID(), target: mid, emoji, on: !!on });
  }

  /** typing tells the chat's other members this user is typing; best effort. @param {string} chat */
  typing(chat) {
    return this._sess?.write({ type: 'typing', chat }) ?? false;
  }

  /**
   * markRead sends a read receipt up to the message at seq (or with that
   * id); best effort: false when not connected.
   * @param {string} chat @param {number|string} seqOrId
   */
  async markRead(chat, seqOrId) {
    let id = typeof seqOrId === 'string' ? seqOrId : this._store.idAt(chat, seqOrId);
    if (!id && typeof seqOrId === 'number' && seqOrId > 0) {
      const page = await this._rest.after(chat, seqOrId - 1, 1);
      id = page.messages.find((m) => m.seq === seqOrId)?.id;
    }
    if (!id) throw new TypeError(`markRead: no message at ${seqOrId} in ${chat}`);
    return this._sess?.write({ type: 'read', chat, upto: id }) ?? false;
  }

  // --- tracking

  /** @param {string} chat @param {number} [afterSeq] */
  track(chat, afterSeq = 0) {
    if (this._tracker.track(chat, afterSeq)) this._sess?.syncer.schedule(chat, 0, false);
  }

  /** @param {string} chat */
  untrack(chat) {
    this._tracker.untrack(chat);
    this._store.drop(chat);
  }

  /** @param {string} chat */
  position(chat) {
    return this._tracker.contiguous(chat);
  }

  /** @param {string} chat @param {string} id */
  get(chat, id) {
    const m = this._store.get(chat, id);
    return m && copyMessage(m);
  }

  // --- REST

  listChats() {
    return this._rest.listChats();
  }
  /** @param {string[]} members @param {string} [title] */
  createGroup(members, title) {
    return this._rest.createGroup(members, title);
  }
  /** @param {string} user */
  directChat(user) {
    return this._rest.directChat(user);
  }
  /** @param {string} chat @param {string} user */
  addMember(chat, user) {
    return this._rest.addMember(chat, user);
  }
  /** @param {string} chat @param {string} user */
  removeMember(chat, user) {
    return this._rest.removeMember(chat, user);
  }

  /**
   * history reads the page of chat's log below seq `before` (default: the
   * newest), at most `limit` seqs (default 50), oldest first.
   * @param {string} chat @param {{before?: number, limit?: number}} [opts]
   */
  async history(chat, opts = {}) {
    let before = opts.before;
    if (before === undefined) {
      const ch = (await this._rest.listChats()).find((c) => c.id === chat);
      if (!ch) throw new APIError(404, 'not_found', `chat ${chat} is not one of yours`);
      before = Math.max(ch.lastSeq, this._tracker.contiguous(chat) ?? 0) + 1;
    }
    const page = await pageUp(this._rest, chat, before, Math.min(Math.max(opts.limit ?? 50, 1), 1000));
    this._keep(page.messages);
    return page;
  }

  /**
   * _keep stores the state of messages read over REST that the SDK holds
   * none for, so later events about them come with an `update` message.
   * The state read is current as of the read; events handed out after it
   * that are older set again what they set before (see applyEvent), so the
   * state still ends right.
   * @param {import('../index.js').Message[]} msgs
   */
  _keep(msgs) {
    for (const m of msgs) if (!this._store.get(m.chat, m.id)) this._store.put(copyMessage(m));
  }

  /** message reads one message with its current state. @param {string} chat @param {string} mid */
  async message(chat, mid) {
    const raw = await this._rest.message(chat, mid);
    const m = toMessage(raw);
    if (!raw.kind || raw.kind === 'message') this._keep([m]);
    return m;
  }

  /**
   * presence asks who of users is online (at most 100); default: the other
   * members of the caller's chats.
   * @param {string[]} [users]
   */
  async presence(users) {
    if (!users) {
      const me = this._user ?? tokenSub(await this._token());
      const set = new Set();
      for (const ch of await this._rest.listChats()) for (const u of ch.members) if (u !== me) set.add(u);
      users = [...set].slice(0, 100);
    }
    if (!users.length) return {};
    return this._rest.presence(users);
  }
}

/** newCID returns a fresh client id for a send. */
function newCID() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * endpoints derives the REST base and the WebSocket URL from a base URL; an
 * empty or relative one is resolved against the page's location.
 * @param {string} raw
 */
function endpoints(raw) {
  const loc = globalThis.location?.href;
  const u = loc ? new URL(raw || '/', loc) : new URL(raw);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`ChatClient: url scheme ${u.protocol}, want http or https`);
  u.search = '';
  u.hash = '';
  const rest = u.href.replace(/\/+$/, '');
  const ws = new URL(u.href);
  ws.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  ws.pathname = ws.pathname.replace(/\/+$/, '') + '/ws';
  return { rest, ws: ws.href };
}
