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
    return ((await this.call('GET', '/api/chats')).chats ?? []).map(toChat);
  }

  /** @param {string[]} members @param {string} [title] @returns {Promise<Chat>} */
  async createGroup(members, title = '') {
    return toChat(await this.call('POST', '/api/chats', { members, title }));
  }

  /** @param {string} user @returns {Promise<Chat>} */
  async directChat(user) {
    return toChat(await this.call('POST', '/api/chats/direct', { user }));
  }

  /** @param {string} chat @param {string} user @returns {Promise<Chat>} */
  async addMember(chat, user) {
    return toChat(await this.call('POST', `/api/chats/${enc(chat)}/members`, { user }));
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
 * toChat turns the REST answer's chat (snake_case on the wire) into the SDK's
 * camelCase Chat, like its Message.
 * @param {any} raw
 */
export function toChat(raw) {
  /** @type {any} */
  const ch = { id: raw.id, kind: raw.kind, title: raw.title ?? '', members: raw.members ?? [], lastSeq: raw.last_seq ?? 0, createdAt: raw.created_at };
  if (raw.read_seq !== undefined) ch.readSeq = raw.read_seq;
  if (raw.unread !== undefined) ch.unread = raw.unread;
  if (raw.members_read !== undefined) ch.membersRead = raw.members_read;
  return ch;
}

/** isMessage: a history row that is a message, not an event about one. @param {any} r */
const isMessage = (r) => !r.kind || r.kind === 'message';

/**
 * pageUp reads the newest `limit` messages of chat's log below seq `before`,
 * oldest first, with their current state, and the raw events from the first
 * of them up. Edits, deletes and reactions share the log's seqs, so it reads
 * window after window downward until it has `limit` messages or reaches the
 * chat's start: `limit` counts messages, never events.
 * @param {Rest} rest @param {string} chat @param {number} before first seq not wanted
 * @param {number} limit
 */
export async function pageUp(rest, chat, before, limit) {
  /** @type {any[]} */
  let rows = [];
  let count = 0;
  let top = before; // the lowest seq read so far; everything below is unread
  while (top > 1 && count < limit) {
    const after = Math.max(0, top - 1 - limit);
    const got = (await rest.after(chat, after, top - 1 - after)).messages.filter((r) => r.seq < top);
    rows = got.concat(rows);
    count += got.filter(isMessage).length;
    top = after + 1;
  }
  let first = 0; // drop the oldest messages past limit, and the events below the first kept
  for (let extra = count - limit; extra > 0; first++) if (isMessage(rows[first])) extra--;
  while (first < rows.length && !isMessage(rows[first])) first++;
  const trimmed = first > 0 && rows.slice(0, first).some(isMessage);
  rows = rows.slice(first);
  const events = rows.map((r) => toEvent(r, 'history'));
  const messages = rows.filter(isMessage).map(toMessage);
  return { messages, events, more: trimmed || top > 1 };
}
