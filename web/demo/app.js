// chatd's demo app: a chat client in plain ES modules on top of the SDK
// that chatd serves at /sdk/. No build step, no framework.
//
// The URL fragment holds `&`-separated parameters like a query string:
// `#token=T` signs in (the fragment never reaches the server, so the token
// stays out of its logs; the page removes it from the address bar), and
// `#chat=ID` opens that chat with its history loaded. A token for another
// user than the one signed in to this tab is asked about before it is used:
// a link anyone can send must not swap the identity the user writes as.
//
// What the SDK does (ack, dedupe, order by seq, resync after reconnect,
// resend by cid) the app does not repeat: it shows what the SDK hands out.
// It tracks every chat from the seq the chat list reports, so the SDK hands
// out only what is new, and reads older messages page by page (history) as
// the user scrolls up.

import { ChatClient, ClosedError } from '/sdk/index.js';
import { el, fill, syncList, time, presenceText, dot, typingText } from './render.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const EMOJIS = ['👍', '❤️', '😂', '🎉'];
const PAGE = 30;
const TYPING_SHOWN_MS = 4000;
// The server passes one typing frame per chat per 3 s and drops the rest,
// so sending more often costs little and keeps the others' indicator on.
const TYPING_SEND_EVERY_MS = 1000;

/**
 * Entry is one row of a chat's view: a message (by id) or an own send not
 * yet accepted (by 'cid:'+cid).
 * @typedef {{key: string, id?: string, cid: string, seq?: number, from: string, body: string, ts?: string,
 *   editedAt?: string, deleted: boolean, reactions: Record<string, string[]>,
 *   status: 'sending'|'accepted'|'failed', error?: string, editing?: boolean, draft?: string, node?: HTMLElement, drawn?: string}} Entry
 * @typedef {{msgs: Map<string, Entry>, before: number|undefined, more: boolean, loading: boolean, loaded: boolean, readSent: number}} View
 */

const S = {
  /** @type {ChatClient | null} */ client: null,
  me: '',
  token: '',
  devUser: '',
  signingOut: false,
  /** @type {Map<string, any>} chat id → chat (with unread and counted: the seq up to which unread is known) */
  chats: new Map(),
  /** @type {Map<string, HTMLElement>} */ chatNodes: new Map(),
  /** @type {string | null} */ open: null,
  /** @type {string | null} a chat asked for by the fragment, opened once the list has it */ want: null,
  /** @type {Map<string, View>} */ views: new Map(),
  /** @type {Map<string, {online: boolean, lastSeen?: string}>} */ presence: new Map(),
  /** @type {Map<string, Map<string, number>>} chat → user → read seq (from receipts) */ readers: new Map(),
  /** @type {Map<string, Map<string, number>>} chat → user → typing shown until (ms) */ typing: new Map(),
  lastTypingSent: 0,
  refreshing: /** @type {Promise<void> | null} */ (null),
};

// Test hook: every message the SDK handed out, in order (the browser tests
// check that each arrives exactly once and in seq order).
const handedOut = [];
Object.defineProperty(window, 'chatdDemo', { value: Object.freeze({ handedOut }) });

// ---------------------------------------------------------------- sign-in

function fragment() {
  return new URLSearchParams(location.hash.slice(1));
}

/** setFragment replaces the fragment without a history entry or a hashchange. @param {URLSearchParams} p */
function setFragment(p) {
  const s = p.toString();
  history.replaceState(null, '', location.pathname + location.search + (s ? `#${s}` : ''));
}

function tabDevice() {
  let d = sessionStorage.getItem('chatd.device');
  if (!d) {
    d = `web-${Math.random().toString(36).slice(2, 10)}`;
    sessionStorage.setItem('chatd.device', d);
  }
  return d;
}

/** tokenExp reads a JWT's exp (seconds) without verifying it. @param {string} tok */
function tokenExp(tok) {
  try {
    const b64 = tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(b64)).exp ?? 0;
  } catch {
    return 0;
  }
}

/** tokenSub reads a JWT's sub without verifying it ('' when unreadable). @param {string} tok */
function tokenSub(tok) {
  try {
    const b64 = tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const sub = JSON.parse(atob(b64)).sub;
    return typeof sub === 'string' ? sub : '';
  } catch {
    return '';
  }
}

/**
 * linkToken takes a token from a `#token=` link. With no token in this tab,
 * or one for the same user, it becomes the tab's token and linkToken
 * returns true. A token for another user is only offered: the page asks,
 * and a yes stores it and reloads (a new identity starts clean); linkToken
 * returns false and the tab keeps its user meanwhile.
 * @param {string} tok
 */
function linkToken(tok) {
  const current = sessionStorage.getItem('chatd.token');
  if (current && tokenSub(current) !== tokenSub(tok)) {
    askSwitch(tok, current);
    return false;
  }
  sessionStorage.setItem('chatd.token', tok);
  sessionStorage.removeItem('chatd.devUser');
  return true;
}

/** @type {string} the token a link offered, while the page asks about it */
let offered = '';

/** askSwitch shows the question whether to switch to tok's user. @param {string} tok @param {string} current */
function askSwitch(tok, current) {
  offered = tok;
  const to = tokenSub(tok).slice(0, 64) || 'an unknown user';
  const from = tokenSub(current).slice(0, 64) || 'the current user';
  $('switch-text').textContent =
    `This link signs this tab in as ${to} instead of ${from}. Switch only if you asked for this link.`;
  $('switch-accept').textContent = `Switch to ${to}`;
  $('switch-decline').textContent = `Stay ${from}`;
  $('switch-user').hidden = false;
  $('switch-decline').focus();
}

$('switch-accept').addEventListener('click', () => {
  sessionStorage.setItem('chatd.token', offered);
  sessionStorage.removeItem('chatd.devUser');
  offered = '';
  location.reload();
});

$('switch-decline').addEventListener('click', () => {
  offered = '';
  $('switch-user').hidden = true;
});

/** devToken asks the development login for a token. @param {string} user */
async function devToken(user) {
  const resp = await fetch('/api/dev/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ user, device: tabDevice() }),
  });
  const body = await resp.json().catch(() => ({}));
  if (resp.status === 404) throw new Error('The development login is off: start chatd with --dev-login, or sign in with a token.');
  if (!resp.ok) throw new Error(body.error || `sign-in failed (${resp.status})`);
  return body.token;
}

/** devLoginEnabled: the route answers 400 to an empty body when on, 404 when off. */
async function devLoginEnabled() {
  try {
    const resp = await fetch('/api/dev/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    return resp.status === 400;
  } catch {
    return false;
  }
}

async function showSignIn(error = '') {
  $('app').hidden = true;
  $('banner').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = error;
  const dev = await devLoginEnabled();
  $('dev-form').hidden = !dev;
  (dev ? $('dev-name') : $('token-input')).focus();
}

$('dev-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = /** @type {HTMLInputElement} */ ($('dev-name')).value.trim();
  try {
    const tok = await devToken(name);
    sessionStorage.setItem('chatd.devUser', name);
    await signIn(tok, name);
  } catch (err) {
    $('signin-error').textContent = String(err.message ?? err);
  }
});

$('token-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  sessionStorage.removeItem('chatd.devUser');
  await signIn(/** @type {HTMLInputElement} */ ($('token-input')).value.trim(), '');
});

$('signout').addEventListener('click', signOut);

async function signOut() {
  S.signingOut = true;
  await S.client?.close().catch(() => {});
  sessionStorage.removeItem('chatd.token');
  sessionStorage.removeItem('chatd.devUser');
  setFragment(new URLSearchParams());
  location.reload();
}

/**
 * signIn starts the SDK with tok. The token function renews a development
 * login's token before it expires; a pasted token is used until the server
 * refuses it, and then the page asks for a new one.
 * @param {string} tok @param {string} devUser
 */
async function signIn(tok, devUser) {
  if (!tok) return showSignIn('No token given.');
  sessionStorage.setItem('chatd.token', tok);
  S.token = tok;
  S.devUser = devUser;
  const client = new ChatClient({
    url: location.origin,
    token: async () => {
      if (S.devUser && tokenExp(S.token) - Date.now() / 1000 < 600) {
        S.token = await devToken(S.devUser);
        sessionStorage.setItem('chatd.token', S.token);
      }
      return S.token;
    },
    trackAll: false,
  });
  S.client = client;
  wire(client);
  $('signin').hidden = true;
  $('app').hidden = false;
  banner('connecting', 'Connecting…');
  try {
    await client.connect();
  } catch (err) {
    if (S.signingOut) return;
    sessionStorage.removeItem('chatd.token');
    showSignIn(err instanceof ClosedError ? `Signed out: ${err.message}` : String(err.message ?? err));
  }
}

// ---------------------------------------------------------------- SDK events

/** @param {ChatClient} c */
function wire(c) {
  c.on('state', (ev) => {
    const conn = $('conn');
    conn.dataset.state = ev.state;
    conn.textContent = ev.state === 'open' ? 'online' : ev.state;
    if (ev.state === 'open') {
      S.me = ev.user ?? S.me;
      $('me').textContent = S.me;
      banner('open', '');
      refreshChats().then(refreshPresence);
      return;
    }
    if (ev.state === 'reconnecting') {
      const why = ev.code ? `closed ${ev.code}: ${ev.meaning}` : ev.meaning;
      const reason = ev.reason ? ` (${ev.reason})` : '';
      const wait = ev.retryInMs !== undefined ? ` Next try in ${(ev.retryInMs / 1000).toFixed(1)} s.` : '';
      banner('reconnecting', `Reconnecting… Connection ${why}${reason}.${wait}`);
      return;
    }
    if (ev.state === 'closed' && !S.signingOut) {
      banner('closed', `Disconnected: ${ev.code ?? ''} ${ev.meaning ?? ''}${ev.reason ? ` (${ev.reason})` : ''}`, true);
    }
  });

  c.on('message', (m) => {
    handedOut.push({ chat: m.chat, id: m.id, seq: m.seq, from: m.from, body: m.body });
    if (handedOut.length > 10000) handedOut.splice(0, 1000); // a long session stays small
    const ch = S.chats.get(m.chat);
    if (!ch) {
      refreshChats(); // a chat someone else just made: the list names it
    } else {
      ch.lastSeq = Math.max(ch.lastSeq ?? 0, m.seq);
      ch.active = Date.now();
      if (m.from !== S.me && m.seq > ch.counted && !m.deleted && !isReading(m.chat)) ch.unread = (ch.unread ?? 0) + 1;
      ch.counted = Math.max(ch.counted, m.seq);
    }
    S.typing.get(m.chat)?.delete(m.from);
    const v = S.views.get(m.chat);
    if (v) {
      mergeMessage(v, m, true);
      drawMessages(m.chat, { stick: true });
    }
    if (isReading(m.chat)) markRead(m.chat);
    drawChats();
    drawTyping();
  });

  c.on('update', ({ message, event }) => {
    const ch = S.chats.get(event.chat);
    if (ch) ch.lastSeq = Math.max(ch.lastSeq ?? 0, event.seq);
    const v = S.views.get(event.chat);
    const e = v && event.target ? v.msgs.get(event.target) : undefined;
    if (!e) return;
    if (message) setState(e, message);
    else applyEvent(e, event);
    drawMessages(event.chat);
  });

  c.on('typing', ({ chat, user }) => {
    if (user === S.me) return;
    let m = S.typing.get(chat);
    if (!m) S.typing.set(chat, (m = new Map()));
    m.set(user, Date.now() + TYPING_SHOWN_MS);
    drawTyping();
    setTimeout(drawTyping, TYPING_SHOWN_MS + 50);
  });

  c.on('presence', ({ user, online, lastSeen }) => {
    S.presence.set(user, { online, lastSeen });
    drawChats();
    drawHead();
  });

  c.on('receipt', ({ chat, user, seq }) => {
    let m = S.readers.get(chat);
    if (!m) S.readers.set(chat, (m = new Map()));
    m.set(user, Math.max(m.get(user) ?? 0, seq));
    const ch = S.chats.get(chat);
    if (user === S.me && ch && seq >= ch.counted) ch.unread = 0; // read on another device
    drawChats();
    drawMessages(chat);
  });

  c.on('error', (err) => console.warn('chatd:', err.message));
}

/** @param {'connecting'|'reconnecting'|'closed'|'open'} state @param {string} text @param {boolean} [signInAgain] */
function banner(state, text, signInAgain = false) {
  const b = $('banner');
  b.dataset.state = state;
  b.hidden = state === 'open';
  $('banner-text').textContent = text;
  $('banner-action').hidden = !signInAgain;
}
$('banner-action').addEventListener('click', signOut);

// ---------------------------------------------------------------- chats

/** refreshChats re-reads the chat list (unread counts are the server's) and tracks new chats from their last seq. */
function refreshChats() {
  if (S.refreshing) return S.refreshing;
  S.refreshing = (async () => {
    try {
      const list = await S.client.listChats();
      for (const ch of list) {
        const had = S.chats.get(ch.id);
        if (!had) S.client.track(ch.id, ch.lastSeq ?? 0);
        const unread = isReading(ch.id) ? 0 : ch.unread ?? 0;
        S.chats.set(ch.id, { ...had, ...ch, unread, counted: Math.max(had?.counted ?? 0, ch.lastSeq ?? 0), active: had?.active ?? Date.parse(ch.createdAt) });
      }
      drawChats();
      if (S.want && S.chats.has(S.want)) openChat(S.want);
      else if (S.want) {
        $('no-chat').textContent = `Chat ${S.want} is not one of yours.`;
        S.want = null;
      }
    } catch (err) {
      console.warn('chatd: list chats:', err.message);
    } finally {
      S.refreshing = null;
    }
  })();
  return S.refreshing;
}

async function refreshPresence() {
  try {
    const all = await S.client.presence();
    for (const [user, p] of Object.entries(all)) S.presence.set(user, p);
    drawChats();
    drawHead();
  } catch (err) {
    console.warn('chatd: presence:', err.message);
  }
}

/** @param {any} ch */
function chatTitle(ch) {
  const others = ch.members.filter((/** @type {string} */ u) => u !== S.me);
  if (ch.kind === 'direct') return others[0] ?? S.me;
  return ch.title || others.join(', ') || 'group';
}

/** @param {any} ch the presence shown for a chat: the peer's, or whether any member is online */
function chatPresence(ch) {
  const others = ch.members.filter((/** @type {string} */ u) => u !== S.me);
  if (ch.kind === 'direct') return S.presence.get(others[0]);
  return { online: others.some((/** @type {string} */ u) => S.presence.get(u)?.online) };
}

function drawChats() {
  const chats = [...S.chats.values()].sort((a, b) => (b.active ?? 0) - (a.active ?? 0));
  $('no-chats').hidden = chats.length > 0;
  const nodes = chats.map((ch) => {
    let li = S.chatNodes.get(ch.id);
    if (!li) {
      const btn = el('button', { type: 'button', class: 'chat-item', dataset: { testid: 'chat-item', chat: ch.id }, onclick: () => go(ch.id) });
      li = el('li', {}, btn);
      S.chatNodes.set(ch.id, li);
    }
    const btn = /** @type {HTMLElement} */ (li.firstElementChild);
    const typing = [...(S.typing.get(ch.id)?.entries() ?? [])].some(([, until]) => until > Date.now());
    const title = chatTitle(ch);
    const sig = JSON.stringify([title, ch.unread, chatPresence(ch)?.online, typing, S.open === ch.id, ch.kind]);
    if (btn.dataset.sig !== sig) {
      btn.dataset.sig = sig;
      btn.dataset.title = title;
      fill(
        btn,
        dot(chatPresence(ch)),
        el('span', { class: 'name' }, title),
        ch.kind === 'group' ? el('span', { class: 'kind' }, 'group') : null,
        typing ? el('span', { class: 'typing-hint' }, 'typing…') : null,
        ch.unread > 0 ? el('span', { class: 'badge', dataset: { testid: 'unread' }, 'aria-label': `${ch.unread} unread` }, String(ch.unread)) : null,
      );
      if (S.open === ch.id) btn.setAttribute('aria-current', 'true');
      else btn.removeAttribute('aria-current');
    }
    return li;
  });
  syncList($('chat-list'), nodes);
}

$('new-chat').addEventListener('submit', async (e) => {
  e.preventDefault();
  const err = $('new-chat-error');
  err.textContent = '';
  const users = /** @type {HTMLInputElement} */ ($('new-users')).value.split(/[\s,]+/).filter(Boolean);
  const title = /** @type {HTMLInputElement} */ ($('new-title')).value.trim();
  const submitter = /** @type {SubmitEvent} */ (e).submitter;
  const kind = submitter?.getAttribute('value') ?? (users.length === 1 && !title ? 'direct' : 'group');
  try {
    if (kind === 'direct' && users.length !== 1) throw new Error('A direct chat is with exactly one other user.');
    const ch = kind === 'direct' ? await S.client.directChat(users[0]) : await S.client.createGroup(users, title);
    if (!S.chats.has(ch.id)) {
      S.client.track(ch.id, ch.lastSeq ?? 0);
      S.chats.set(ch.id, { ...ch, unread: 0, counted: ch.lastSeq ?? 0, active: Date.now() });
    }
    /** @type {HTMLFormElement} */ (e.target).reset();
    drawChats();
    go(ch.id);
    refreshPresence();
  } catch (x) {
    err.textContent = String(x.message ?? x);
  }
});

// ---------------------------------------------------------------- one chat

/** go opens a chat through the fragment, so the address can be shared and reloaded. @param {string} chat */
function go(chat) {
  const p = fragment();
  p.set('chat', chat);
  setFragment(p);
  openChat(chat);
}

$('back').addEventListener('click', () => {
  const was = S.open;
  const p = fragment();
  p.delete('chat');
  setFragment(p);
  S.open = null;
  document.body.classList.remove('in-chat');
  drawPane();
  drawChats();
  S.chatNodes.get(was ?? '')?.querySelector('button')?.focus();
});

window.addEventListener('hashchange', () => {
  const p = fragment();
  const tok = p.get('token');
  if (tok) {
    p.delete('token');
    setFragment(p);
    if (linkToken(tok)) location.reload(); // a new token: start clean
    return;
  }
  const chat = p.get('chat');
  if (chat && chat !== S.open) {
    if (S.chats.has(chat)) openChat(chat);
    else {
      S.want = chat;
      refreshChats();
    }
  }
});

/** @param {string} chat */
function openChat(chat) {
  S.want = null;
  S.open = chat;
  document.body.classList.add('in-chat');
  let v = S.views.get(chat);
  if (!v) {
    v = { msgs: new Map(), before: undefined, more: true, loading: false, loaded: false, readSent: 0 };
    S.views.set(chat, v);
  }
  const ch = S.chats.get(chat);
  if (ch) ch.unread = 0;
  drawPane();
  drawChats();
  drawMessages(chat, { bottom: true });
  if (!v.loaded) loadOlder(chat);
  else markRead(chat);
  /** @type {HTMLTextAreaElement} */ ($('compose')).focus();
}

/** isReading: the chat is open in a visible page, so what arrives is read. @param {string} chat */
function isReading(chat) {
  return S.open === chat && document.visibilityState === 'visible';
}

document.addEventListener('visibilitychange', () => {
  if (S.open && isReading(S.open)) {
    const ch = S.chats.get(S.open);
    if (ch) ch.unread = 0;
    markRead(S.open);
    drawChats();
  }
});

/** markRead sends a read receipt up to the newest message on screen, once per seq. @param {string} chat */
function markRead(chat) {
  const v = S.views.get(chat);
  if (!v || !S.client) return;
  let top;
  for (const e of v.msgs.values()) if (e.id && e.seq && (!top || e.seq > top.seq)) top = e;
  if (!top || top.seq <= v.readSent) return;
  v.readSent = top.seq;
  Promise.resolve(S.client.markRead(chat, top.id)).catch(() => {
    v.readSent = 0;
  });
}

/**
 * loadOlder reads the page of history above what the view holds. The first
 * page is the newest; scrolling to the top (or the button) reads the next.
 * @param {string} chat
 */
async function loadOlder(chat) {
  const v = S.views.get(chat);
  if (!v || v.loading || !v.more) return;
  v.loading = true;
  drawPane();
  const scroller = $('scroller');
  const fromBottom = scroller.scrollHeight - scroller.scrollTop;
  try {
    const page = await S.client.history(chat, { before: v.before, limit: PAGE });
    for (const m of page.messages) mergeMessage(v, m, false);
    const seqs = page.events.map((e) => e.seq);
    if (seqs.length) v.before = Math.min(...seqs);
    v.more = page.more && seqs.length > 0;
    const first = !v.loaded;
    v.loaded = true;
    v.loading = false;
    if (S.open !== chat) return;
    drawPane();
    drawMessages(chat);
    if (first) scroller.scrollTop = scroller.scrollHeight;
    else scroller.scrollTop = scroller.scrollHeight - fromBottom;
    markRead(chat);
    // A first page shorter than the screen cannot be scrolled up: read on.
    if (v.more && scroller.scrollHeight <= scroller.clientHeight) loadOlder(chat);
  } catch (err) {
    v.loading = false;
    drawPane();
    $('history-start').hidden = false;
    $('history-start').textContent = `Could not load history: ${err.message}`;
  }
}

$('load-older').addEventListener('click', () => S.open && loadOlder(S.open));
$('scroller').addEventListener('scroll', () => {
  if (S.open && $('scroller').scrollTop < 60) loadOlder(S.open);
});

/**
 * mergeMessage puts a message the SDK handed out (live) or history returned
 * into the view. A history row never overwrites an entry the view has: the
 * live events after it already changed that entry, and the row may be older.
 * @param {View} v @param {any} m @param {boolean} live
 */
function mergeMessage(v, m, live) {
  const own = v.msgs.get(`cid:${m.cid}`);
  if (own && m.from === S.me) v.msgs.delete(own.key);
  const had = v.msgs.get(m.id);
  if (had && !live) return;
  /** @type {Entry} */
  const e = had ?? { key: m.id, cid: m.cid, from: m.from, body: '', deleted: false, reactions: {}, status: 'accepted' };
  e.id = m.id;
  e.seq = m.seq;
  e.ts = m.ts;
  e.status = 'accepted';
  setState(e, m);
  if (own?.editing) Object.assign(e, { editing: own.editing, draft: own.draft });
  v.msgs.set(m.id, e);
}

/** setState copies a message's current state into its entry. @param {Entry} e @param {any} m */
function setState(e, m) {
  e.body = m.body;
  e.deleted = !!m.deleted;
  e.editedAt = m.editedAt;
  e.reactions = m.reactions ?? {};
}

/** applyEvent applies an edit, delete or reaction to an entry the SDK does not keep (read from history). */
function applyEvent(/** @type {Entry} */ e, /** @type {any} */ ev) {
  if (ev.kind === 'edit' && !e.deleted) Object.assign(e, { body: ev.body, editedAt: ev.ts });
  else if (ev.kind === 'delete') Object.assign(e, { deleted: true, body: '', reactions: {} });
  else if (ev.kind === 'reaction' && !e.deleted && ev.emoji) {
    const users = new Set(e.reactions[ev.emoji] ?? []);
    if (ev.on) users.add(ev.from);
    else users.delete(ev.from);
    e.reactions = { ...e.reactions };
    if (users.size) e.reactions[ev.emoji] = [...users].sort();
    else delete e.reactions[ev.emoji];
  }
}

/** send sends the composer's text; the row shows "sending" until the server accepts it. */
async function send() {
  const chat = S.open;
  const box = /** @type {HTMLTextAreaElement} */ ($('compose'));
  const body = box.value.trim();
  if (!chat || !body) return;
  box.value = '';
  const v = /** @type {View} */ (S.views.get(chat));
  const cid = crypto.randomUUID();
  /** @type {Entry} */
  const e = { key: `cid:${cid}`, cid, from: S.me, body, deleted: false, reactions: {}, status: 'sending' };
  v.msgs.set(e.key, e);
  drawMessages(chat, { bottom: true });
  try {
    const a = await S.client.send(chat, body, { cid });
    // The SDK hands the accepted message out as soon as its chat's seqs are
    // contiguous; until then this row stands for it.
    if (v.msgs.get(e.key) === e) Object.assign(e, { status: 'accepted', id: a.id, seq: a.seq, ts: a.ts });
  } catch (err) {
    Object.assign(e, { status: 'failed', error: err.code || err.message });
  }
  drawMessages(chat);
}

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
$('compose').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
$('compose').addEventListener('input', () => {
  if (!S.open || !/** @type {HTMLTextAreaElement} */ ($('compose')).value) return;
  const now = Date.now();
  if (now - S.lastTypingSent < TYPING_SEND_EVERY_MS) return;
  S.lastTypingSent = now;
  S.client?.typing(S.open);
});

function drawPane() {
  const chat = S.open;
  const has = !!chat;
  $('no-chat').hidden = has;
  $('chat-head').hidden = !has;
  $('scroller').hidden = !has;
  $('composer').hidden = !has;
  if (!has) {
    $('typing').textContent = '';
    return;
  }
  const v = S.views.get(chat);
  const older = /** @type {HTMLButtonElement} */ ($('load-older'));
  older.hidden = !v?.more;
  older.disabled = !!v?.loading;
  older.textContent = v?.loading ? 'Loading…' : 'Load older messages';
  $('history-start').hidden = !!v?.more || !v?.loaded;
  if (v?.loaded && !v.more) $('history-start').textContent = 'Start of the conversation';
  drawHead();
  drawTyping();
}

function drawHead() {
  const ch = S.open ? S.chats.get(S.open) : undefined;
  if (!ch) return;
  $('chat-title').textContent = chatTitle(ch);
  const members = $('chat-members');
  fill(
    members,
    ...ch.members
      .filter((/** @type {string} */ u) => u !== S.me)
      .map((/** @type {string} */ u) => el('span', { class: 'member' }, dot(S.presence.get(u)), `${u} · ${presenceText(S.presence.get(u))}`)),
  );
}

function drawTyping() {
  const now = Date.now();
  for (const m of S.typing.values()) for (const [u, until] of m) if (until <= now) m.delete(u);
  $('typing').textContent = S.open ? typingText([...(S.typing.get(S.open)?.keys() ?? [])]) : '';
  drawChats();
}

/**
 * drawMessages updates the open chat's list; stick keeps a reader at the
 * bottom following new messages, bottom scrolls there.
 * @param {string} chat @param {{stick?: boolean, bottom?: boolean}} [opt]
 */
function drawMessages(chat, opt = {}) {
  if (S.open !== chat) return;
  const v = S.views.get(chat);
  if (!v) return;
  const scroller = $('scroller');
  const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  const entries = [...v.msgs.values()].sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
  const readers = S.readers.get(chat);
  syncList($('messages'), entries.map((e) => drawEntry(chat, e, readers)));
  if (opt.bottom || (opt.stick && atBottom)) scroller.scrollTop = scroller.scrollHeight;
}

/** stateText is an own message's state: sending, accepted, read by … @param {Entry} e @param {Map<string, number> | undefined} readers */
function stateText(e, readers) {
  if (e.status === 'sending') return 'sending…';
  if (e.status === 'failed') return `not sent: ${e.error}`;
  const by = [...(readers?.entries() ?? [])].filter(([u, s]) => u !== S.me && e.seq && s >= e.seq).map(([u]) => u).sort();
  return by.length ? `read by ${by.join(', ')}` : 'accepted';
}

/** drawEntry returns the entry's row, rebuilt only when what it shows changed. */
function drawEntry(/** @type {string} */ chat, /** @type {Entry} */ e, /** @type {Map<string, number> | undefined} */ readers) {
  const mine = e.from === S.me;
  const state = mine ? stateText(e, readers) : '';
  const sig = JSON.stringify([e.id, e.seq, e.body, e.deleted, e.editedAt, e.reactions, e.status, state, e.editing]);
  if (e.node && e.drawn === sig) return e.node;
  const hadFocus = e.node?.contains(document.activeElement) ? /** @type {HTMLElement} */ (document.activeElement).dataset.testid : undefined;
  const li = e.node ?? el('li', { class: 'msg' });
  e.node = li;
  e.drawn = sig;
  li.className = `msg${mine ? ' mine' : ''}${e.deleted ? ' deleted' : ''}`;
  Object.assign(li.dataset, { testid: 'message', from: e.from, status: e.status });
  if (e.id) li.dataset.id = e.id;
  if (e.seq) li.dataset.seq = String(e.seq);

  const head = el('div', { class: 'meta' },
    el('span', { class: 'from' }, e.from),
    ' ',
    el('time', { datetime: e.ts ?? '' }, time(e.ts)),
    e.editedAt && !e.deleted ? el('span', { class: 'edited', dataset: { testid: 'edited' } }, ' · edited') : null,
  );
  const body = e.editing
    ? editForm(chat, e)
    : el('p', { class: 'body', dataset: { testid: 'message-body' } }, e.deleted ? 'message deleted' : e.body);

  const reactions = el('div', { class: 'reactions', dataset: { testid: 'reactions' } },
    ...Object.entries(e.reactions).map(([emoji, users]) =>
      el('button', {
        type: 'button', class: 'chip', dataset: { testid: 'reaction', emoji },
        'aria-pressed': String(users.includes(S.me)), title: users.join(', '),
        'aria-label': `${emoji} ${users.length}: ${users.join(', ')}`,
        onclick: () => react(chat, e, emoji),
      }, `${emoji} ${users.length}`)),
  );

  const canAct = !!e.id && !e.deleted && !e.editing;
  const actions = canAct
    ? el('div', { class: 'actions', role: 'group', 'aria-label': `Actions on ${e.from}'s message` },
      ...EMOJIS.map((emoji) => el('button', {
        type: 'button', class: 'act', dataset: { testid: 'react', emoji }, 'aria-label': `React ${emoji}`,
        onclick: () => react(chat, e, emoji),
      }, emoji)),
      mine ? el('button', { type: 'button', class: 'act', dataset: { testid: 'edit' }, onclick: () => startEdit(chat, e) }, 'Edit') : null,
      mine ? el('button', { type: 'button', class: 'act', dataset: { testid: 'delete' }, onclick: () => del(chat, e) }, 'Delete') : null,
    )
    : null;

  fill(
    li,
    head, body, reactions, actions,
    mine ? el('p', { class: `state ${e.status}`, dataset: { testid: 'message-state' } }, state) : null,
  );
  if (e.editing) /** @type {HTMLInputElement} */ (li.querySelector('input'))?.focus();
  else if (hadFocus) /** @type {HTMLElement | null} */ (li.querySelector(`[data-testid="${hadFocus}"]`))?.focus();
  return li;
}

/** @param {string} chat @param {Entry} e */
function editForm(chat, e) {
  const input = el('input', { type: 'text', value: e.draft ?? e.body, dataset: { testid: 'edit-input' }, 'aria-label': 'Edit message', required: true });
  input.addEventListener('input', () => { e.draft = /** @type {HTMLInputElement} */ (input).value; });
  input.addEventListener('keydown', (k) => {
    if (k.key === 'Escape') cancelEdit(chat, e);
  });
  return el('form', {
    class: 'edit', dataset: { testid: 'edit-form' },
    onsubmit: (/** @type {Event} */ ev) => {
      ev.preventDefault();
      saveEdit(chat, e, /** @type {HTMLInputElement} */ (input).value.trim());
    },
  }, input,
  el('button', { type: 'submit', dataset: { testid: 'edit-save' } }, 'Save'),
  el('button', { type: 'button', dataset: { testid: 'edit-cancel' }, onclick: () => cancelEdit(chat, e) }, 'Cancel'));
}

function startEdit(/** @type {string} */ chat, /** @type {Entry} */ e) {
  e.editing = true;
  e.draft = e.body;
  drawMessages(chat);
}

function cancelEdit(/** @type {string} */ chat, /** @type {Entry} */ e) {
  e.editing = false;
  drawMessages(chat);
  /** @type {HTMLElement | null} */ (e.node?.querySelector('[data-testid="edit"]'))?.focus();
}

async function saveEdit(/** @type {string} */ chat, /** @type {Entry} */ e, /** @type {string} */ body) {
  e.editing = false;
  if (!body || body === e.body || !e.id) return drawMessages(chat);
  drawMessages(chat);
  try {
    await S.client.edit(chat, e.id, body);
  } catch (err) {
    alertError(`Edit failed: ${err.message}`);
  }
}

async function del(/** @type {string} */ chat, /** @type {Entry} */ e) {
  if (!e.id) return;
  try {
    await S.client.delete(chat, e.id);
  } catch (err) {
    alertError(`Delete failed: ${err.message}`);
  }
}

async function react(/** @type {string} */ chat, /** @type {Entry} */ e, /** @type {string} */ emoji) {
  if (!e.id) return;
  const on = !(e.reactions[emoji] ?? []).includes(S.me);
  try {
    await S.client.react(chat, e.id, emoji, on);
  } catch (err) {
    alertError(`Reaction failed: ${err.message}`);
  }
}

/** @param {string} text */
function alertError(text) {
  $('typing').textContent = text;
}

// ---------------------------------------------------------------- start

async function start() {
  const p = fragment();
  const tok = p.get('token');
  S.want = p.get('chat');
  if (tok) {
    p.delete('token');
    setFragment(p); // out of the address bar, bookmarks and screenshots
    linkToken(tok);
  }
  const saved = sessionStorage.getItem('chatd.token');
  if (saved) return signIn(saved, sessionStorage.getItem('chatd.devUser') ?? '');
  return showSignIn();
}

start();
