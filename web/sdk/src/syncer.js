// History sync for one session (pkg/client/syncer.go): every tracked chat
// once after hello (duty 3), then any chat whose gap was not filled live
// within gapWait. One loop fetches chats one after another, so a reconnect
// storm costs the server one history query per client at a time.

import { APIError } from './errors.js';
import { backoffDelay } from './backoff.js';

/** The page size asked for; the server caps pages at 1000. */
const historyLimit = 1000;

export class Syncer {
  /** @param {import('./session.js').Session} s */
  constructor(s) {
    this.s = s;
    /** @type {Map<string, {at: number, ifGap: boolean}>} chat → when (and whether) to fetch it */
    this.due = new Map();
    /** @type {Map<string, number>} chat → consecutive failed fetches */
    this.fails = new Map();
    this.list = false;
    /** @type {(() => void) | undefined} */
    this._wake = undefined;
  }

  /**
   * schedule fetches chat after ms; ifGap makes it conditional on a gap at
   * that time (live frames often overtake each other by a few ms, and a
   * history query per reorder would be wasted). An unconditional fetch
   * already scheduled stays so.
   * @param {string} chat @param {number} ms @param {boolean} ifGap
   */
  schedule(chat, ms, ifGap) {
    const at = Date.now() + ms;
    const cur = this.due.get(chat);
    if (!cur) this.due.set(chat, { at, ifGap });
    else this.due.set(chat, { at: Math.min(at, cur.at), ifGap: cur.ifGap && ifGap });
    this._wake?.();
  }

  /** request fetches chat's gap after ms unless filled live by then. @param {string} chat @param {number} ms */
  request(chat, ms) {
    this.schedule(chat, ms, true);
  }

  /** resyncAll schedules every tracked chat now, and the chat list first when trackAll is set. */
  resyncAll() {
    this.list = this.s.c._trackAll;
    for (const chat of this.s.c._tracker.list()) this.schedule(chat, 0, false);
  }

  /** run fetches due chats until the session ends. */
  async run() {
    const s = this.s;
    this.resyncAll();
    while (!s.ended) {
      if (this.list) await this._listChats();
      const { chats, next } = this._takeDue(Date.now());
      for (const chat of chats) {
        if (s.ended) return;
        await this._syncOne(chat);
      }
      if (chats.length || s.ended) continue;
      // Nothing awaits between _takeDue and here, so no schedule is missed.
      await new Promise((resolve) => {
        const done = () => {
          clearTimeout(t);
          this._wake = undefined;
          s.onEnd.delete(done);
          resolve(undefined);
        };
        const t = setTimeout(done, next);
        this._wake = done;
        s.onEnd.add(done);
      });
    }
  }

  /** _takeDue removes and returns the chats due by now, and the ms until the next one. */
  _takeDue(now) {
    const chats = [];
    let next = 3600e3;
    for (const [chat, f] of this.due) {
      if (f.at > now) next = Math.min(next, f.at - now);
      else {
        this.due.delete(chat);
        if (!f.ifGap || this.s.c._tracker.hasGap(chat)) chats.push(chat);
      }
    }
    return { chats, next };
  }

  async _listChats() {
    const c = this.s.c;
    try {
      const chats = await c._rest.listChats();
      this.list = false;
      // A live frame held for the listing came after hello: it is "now",
      // even when the listing, read later, already counts it in lastSeq.
      /** @type {Map<string, number>} */
      const heldFrom = new Map();
      for (const f of c._early ?? []) heldFrom.set(f.chat, Math.min(heldFrom.get(f.chat) ?? Infinity, f.seq));
      for (const ch of chats) {
        const start = c._listedOnce ? 0 : Math.min(startOf(ch, c._trackFrom), (heldFrom.get(ch.id) ?? Infinity) - 1);
        if (c._tracker.track(ch.id, start)) this.schedule(ch.id, 0, false);
      }
      if (!c._listedOnce) c._listed();
    } catch (err) {
      if (this._unauthorized(err)) return;
      await this.s.sleep(retryDelay(err, backoffDelay(3, c._backoffMin, c._backoffMax)));
    }
  }

  /**
   * _syncOne fetches one chat's history and decides what follows: a gap
   * still open is looked at again after gapWait; a transient failure is
   * retried with backoff; a chat we may no longer read is untracked.
   * @param {string} chat
   */
  async _syncOne(chat) {
    const c = this.s.c;
    try {
      await c._syncChat(chat, this.s);
      this.fails.delete(chat);
      if (c._tracker.hasGap(chat)) this.request(chat, c._gapWait);
    } catch (err) {
      if (this.s.ended || this._unauthorized(err)) return;
      if (err instanceof APIError && (err.status === 403 || err.status === 404)) {
        c.untrack(chat);
        return;
      }
      const n = this.fails.get(chat) ?? 0;
      this.fails.set(chat, n + 1);
      this.schedule(chat, retryDelay(err, backoffDelay(n, c._backoffMin, c._backoffMax)), false);
    }
  }

  /** A refused token ends the session: the client dials again with a fresh one. */
  _unauthorized(err) {
    if (err instanceof APIError && err.status === 401) {
      this.s.abort(0, 'history: unauthorized', true);
      return true;
    }
    return false;
  }
}

/** retryDelay honours a Retry-After (429, 503) when it is longer than the backoff. */
function retryDelay(err, ms) {
  return Math.max(ms, err?.retryAfterMs ?? 0);
}

/**
 * startOf is the seq after which a chat of the first listing is handed out:
 * its whole retained history ('start'), only what comes next ('now'), or
 * what the user has not read ('unread').
 * @param {import('../index.js').Chat} ch @param {string} from
 */
function startOf(ch, from) {
  if (from === 'now') return ch.lastSeq;
  if (from === 'unread') return ch.readSeq ?? 0;
  return 0;
}
