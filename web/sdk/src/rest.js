// The REST calls (docs/protocol.md "REST"), shared by the client and its
// history syncer.

import { APIError } from './errors.js';
import { toEvent, toMessage } from './state.js';

/** @typedef {import('../index.js').Chat} Chat */

const enc = encodeURIComponent;

/** A REST call that takes longer is abandoned (pkg/client's HTTP timeout): a black-holed path must not stall the history sync for good. */
const restTimeoutMs = 30000;

export class Rest {
  /**
   * @param {() => string} base REST base URL (no trailing slash)
   * @param {() => Promise<string>} token
   * @param {typeof fetch} fetchFn
   */
  constructor(base, token, fetchFn) {
    this.base = base;
    this.token = token;
    this.fetch = fetchFn;
  }

  /**
   * call performs one JSON call with the bearer token and returns the decoded
   * answer (undefined for an empty one). An error answer throws APIError.
   * @param {string} method @param {string} path @param {unknown} [body]
   */
  async call(method, path, body) {
    const headers = { Authorization: `Bearer ${await this.token()}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await this.fetch(this.base() + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(restTimeoutMs),
    });
    const text = await resp.text();
    if (!resp.ok) {
      let code = '', msg = resp.statusText;
      try {
        const e = JSON.parse(text);
        code = e.code ?? '';
        msg = e.error ?? msg;
      } catch {
        // a non-JSON error body still has its status
      }
      const err = new APIError(resp.status, code, msg);
      const ra = Number(resp.headers.get('Retry-After'));
      if (ra > 0) err.retryAfterMs = ra * 1000;
      throw err;
    }
    return text ? JSON.parse(text) : undefined;
  }

  /** @returns {Promise<Chat[]>} */
  async listChats() {
    return (await this.call('GET', '/api/chats')).chats ?? [];
  }

  /** @param {string[]} members @param {string} [title] @returns {Promise<Chat>} */
  createGroup(members, title = '') {
    return this.call('POST', '/api/chats', { members, title });
  }

  /** @param {string} user @returns {Promise<Chat>} */
  directChat(user) {
    return this.call('POST', '/api/chats/direct', { user });
  }

  /** @param {string} chat @param {string} user @returns {Promise<Chat>} */
  addMember(chat, user) {
    return this.call('POST', `/api/chats/${enc(chat)}/members`, { user });
  }

  /** @param {string} chat @param {string} user */
  async removeMember(chat, user) {
    await this.call('DELETE', `/api/chats/${enc(chat)}/members/${enc(user)}`);
  }

  /**
   * after fetches one page of chat's log with seq above afterSeq, oldest
   * first: {messages: raw rows, next}.
   * @param {string} chat @param {number} afterSeq @param {number} limit
   * @returns {Promise<{messages: any[], next: string|null}>}
   */
  async after(chat, afterSeq, limit) {
    const page = await this.call('GET', `/api/chats/${enc(chat)}/messages?after_seq=${afterSeq}&limit=${limit}`);
    for (const m of page.messages) m.chat = chat;
    return page;
  }

  /** @param {string} chat @param {string} mid */
  async message(chat, mid) {
    const raw = await this.call('GET', `/api/chats/${enc(chat)}/messages/${enc(mid)}`);
    raw.chat = chat;
    return raw;
  }

  /** @param {string[]} users @returns {Promise<Record<string, {online: boolean, lastSeen?: string}>>} */
  async presence(users) {
    const out = await this.call('GET', `/api/presence?users=${enc(users.join(','))}`);
    /** @type {Record<string, {online: boolean, lastSeen?: string}>} */
    const res = {};
    for (const [u, p] of Object.entries(out.presence ?? {})) {
      res[u] = p.last_seen ? { online: !!p.online, lastSeen: p.last_seen } : { online: !!p.online };
    }
    return res;
  }
}

/**
 * pageUp reads the page of chat's log just below seq `before` (all of it up
 * to `last` when before is undefined): at most limit seqs, oldest first, with
 * the messages' current state.
 * @param {Rest} rest @param {string} chat @param {number} before first seq not wanted
 * @param {number} limit
 */
export async function pageUp(rest, chat, before, limit) {
  const after = Math.max(0, before - 1 - limit);
  const want = before - 1 - after;
  /** @type {any[]} */
  let rows = [];
  if (want > 0) rows = (await rest.after(chat, after, want)).messages.filter((r) => r.seq < before);
  const events = rows.map((r) => toEvent(r, 'history'));
  const messages = rows.filter((r) => !r.kind || r.kind === 'message').map(toMessage);
  return { messages, events, more: after > 0 };
}
