// Message state: the SDK applies each chat's events (edit, delete, reaction)
// in seq order to the messages it has handed out, so the app always sees a
// message's current state (docs/protocol.md "Events": live frames carry the
// event only, not the state).

/** @typedef {import('../index.js').Message} Message */
/** @typedef {import('../index.js').ChatEvent} ChatEvent */

/**
 * common is what an event and a message's state share, from a `msg` frame
 * or a history row.
 * @param {any} raw
 */
function common(raw) {
  return {
    id: raw.id,
    cid: raw.cid ?? '',
    chat: raw.chat,
    seq: raw.seq,
    from: raw.from,
    body: raw.body ?? '',
    ts: raw.ts,
  };
}

/**
 * toEvent turns a `msg` frame or history row into a ChatEvent.
 * @param {any} raw @param {'live'|'history'|'self'} via
 * @returns {ChatEvent}
 */
export function toEvent(raw, via) {
  /** @type {ChatEvent} */
  const ev = { ...common(raw), kind: raw.kind || 'message', via };
  if (raw.target) ev.target = raw.target;
  if (raw.emoji) ev.emoji = raw.emoji;
  if (typeof raw.on === 'boolean') ev.on = raw.on;
  if (raw.meta != null) ev.meta = raw.meta;
  return ev;
}

/**
 * toMessage builds a message's state from a message event or a history row.
 * @param {any} raw
 * @returns {Message}
 */
export function toMessage(raw) {
  /** @type {Message} */
  const m = { ...common(raw), deleted: !!raw.deleted, reactions: {} };
  if (raw.meta != null) m.meta = raw.meta;
  if (raw.edited_at) m.editedAt = raw.edited_at;
  for (const [emoji, users] of Object.entries(raw.reactions ?? {})) m.reactions[emoji] = [...users].sort();
  return m;
}

/**
 * applyEvent changes m by one edit, delete or reaction event, in place.
 * Applying the events after a state read from history again is harmless:
 * each one sets what it names (a body, a flag, one user in one emoji's set),
 * so the last event of each kind decides, as on the server.
 * @param {Message} m @param {ChatEvent} ev
 */
export function applyEvent(m, ev) {
  switch (ev.kind) {
    case 'edit':
      if (m.deleted) return; // a delete erased the edits' text too
      m.body = ev.body;
      m.editedAt = ev.ts;
      return;
    case 'delete':
      m.deleted = true;
      m.body = '';
      delete m.meta;
      m.reactions = {};
      return;
    case 'reaction': {
      if (m.deleted || !ev.emoji) return;
      const users = new Set(m.reactions[ev.emoji] ?? []);
      if (ev.on) users.add(ev.from);
      else users.delete(ev.from);
      if (users.size) m.reactions[ev.emoji] = [...users].sort();
      else delete m.reactions[ev.emoji];
      return;
    }
  }
}

/**
 * Store keeps the state of the messages handed out, per chat, the newest
 * maxPerChat of them, plus each kept event's id by seq (for markRead).
 */
export class Store {
  /** @param {number} maxPerChat */
  constructor(maxPerChat = 5000) {
    this.max = maxPerChat;
    /** @type {Map<string, {byId: Map<string, Message>, idBySeq: Map<number, string>}>} */
    this.chats = new Map();
  }

  _chat(chat) {
    let c = this.chats.get(chat);
    if (!c) this.chats.set(chat, (c = { byId: new Map(), idBySeq: new Map() }));
    return c;
  }

  /** @param {ChatEvent} ev */
  noteSeq(ev) {
    const c = this._chat(ev.chat);
    c.idBySeq.set(ev.seq, ev.id);
    if (c.idBySeq.size > this.max) c.idBySeq.delete(c.idBySeq.keys().next().value);
  }

  /** @param {Message} m */
  put(m) {
    const c = this._chat(m.chat);
    c.byId.set(m.id, m);
    if (c.byId.size > this.max) c.byId.delete(c.byId.keys().next().value);
  }

  /** @param {string} chat @param {string} id */
  get(chat, id) {
    return this.chats.get(chat)?.byId.get(id);
  }

  /** @param {string} chat @param {number} seq */
  idAt(chat, seq) {
    return this.chats.get(chat)?.idBySeq.get(seq);
  }

  /** @param {string} chat */
  drop(chat) {
    this.chats.delete(chat);
  }
}

/** copyMessage returns a copy the app may keep without seeing later changes. @param {Message} m */
export function copyMessage(m) {
  const c = { ...m, reactions: {} };
  for (const [k, v] of Object.entries(m.reactions)) c.reactions[k] = [...v];
  return c;
}
