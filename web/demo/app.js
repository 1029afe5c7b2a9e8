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
import { el, fill, syncList, time, presenceText, dot, typingText, linkify, listTime, humanError, utf8Length } from './render.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const EMOJIS = ['👍', '❤️', '😂', '🎉'];
const PAGE = 30;
const TYPING_SHOWN_MS = 4000;
// The server passes one typing frame per chat per 3 s and drops the rest,
// so sending more often costs little and keeps the others' indicator on.
const TYPING_SEND_EVERY_MS = 1000;
// chatd's default --max-body-bytes, used until hello names the server's own.
const DEFAULT_MAX_BODY = 4096;
// The composer shows its byte count from this share of the limit on.
const COUNT_FROM = 0.8;

/**
 * Entry is one row of a chat's view: a message (by id) or an own send not
 * yet accepted (by 'cid:'+cid).
 * @typedef {{key: string, id?: string, cid: string, seq?: number, from: string, body: string, ts?: string,
 *   editedAt?: string, deleted: boolean, reactions: Record<string, string[]>,
 *   status: 'sending'|'accepted'|'failed', error?: string, editing?: boolean, confirming?: boolean, draft?: string, node?: HTMLElement, drawn?: string}} Entry
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
  maxBody: DEFAULT_MAX_BODY,
  /** @type {string | null} the entry (key) whose actions a tap opened */ actionsFor: null,
  refreshing: /** @type {Promise<void> | null} */ (null),
};

/** api is the signed-in client; every call that needs one runs after sign-in. */
function api() {
  if (!S.client) throw new Error('chatd: not signed in');
  return S.client;
}

/** errText is what a caught error says, for the console. @param {unknown} err */
const errText = (err) => (err instanceof Error ? err.message : String(err));

// Test hook: every message the SDK handed out, in order (the browser tests
// check that each arrives exactly once and in seq order).
/** @type {unknown[]} */
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
  if (resp.status === 404) {
    sessionStorage.setItem('chatd.devLogin', 'off');
    throw Object.assign(new Error('The development login is off: start chatd with --dev-login, or sign in with a token.'), { human: true });
  }
  if (!resp.ok) throw new Error(humanError({ status: resp.status, code: body.code, message: body.error }, 'Sign-in failed'));
  sessionStorage.setItem('chatd.devLogin', 'on');
  return body.token;
}

/**
 * devLoginEnabled: the route answers 400 to an empty body when on, 404
 * when off. The answer is kept for the tab, so a reload of the sign-in page
 * asks nothing (each probe is a refused request in the server's logs); a
 * sign-in by name that meets 404 corrects it.
 */
async function devLoginEnabled() {
  const known = sessionStorage.getItem('chatd.devLogin');
  if (known) return known === 'on';
  try {
    const resp = await fetch('/api/dev/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    if (resp.status !== 400 && resp.status !== 404) return false; // not an answer about the flag: ask again next time
    sessionStorage.setItem('chatd.devLogin', resp.status === 400 ? 'on' : 'off');
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
    $('signin-error').textContent = humanError(err, 'Sign-in failed');
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
 * HelloLimits is the browser's WebSocket, reading the limits of the
 * server's first frame (hello) on the side: the SDK keeps them to itself,
 * and the composer must know max_body_bytes to say the limit before a send
 * is refused.
 */
class HelloLimits extends WebSocket {
  /** @param {string | URL} url @param {string | string[]} [protocols] */
  constructor(url, protocols) {
    super(url, protocols);
    const first = (/** @type {MessageEvent} */ ev) => {
      this.removeEventListener('message', first);
      try {
        const max = JSON.parse(ev.data)?.limits?.max_body_bytes;
        if (Number.isInteger(max) && max > 0) {
          S.maxBody = max;
          drawCount();
        }
      } catch {
        // not JSON: the SDK closes such a connection itself
      }
    };
    this.addEventListener('message', first);
  }
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
    WebSocket: HelloLimits,
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
    showSignIn(err instanceof ClosedError ? closedText(err.code) : humanError(err, 'Sign-in failed'));
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
      // The close code and reason are for the console, not for people.
      console.info('chatd: reconnecting:', ev.code, ev.meaning, ev.reason ?? '');
      reconnectBanner(Date.now() + (ev.retryInMs ?? 0));
      return;
    }
    if (ev.state === 'closed' && !S.signingOut) {
      console.info('chatd: closed:', ev.code, ev.meaning, ev.reason ?? '');
      banner('closed', closedText(ev.code), true);
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
      noteLast(ch, m);
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
    if (ch?.last && ch.last.id === event.target) {
      if (event.kind === 'edit') ch.last.body = message?.body ?? event.body;
      if (event.kind === 'delete') ch.last.deleted = true;
      drawChats();
    }
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
    noteRead(chat, user, seq);
    const ch = S.chats.get(chat);
    if (user === S.me && ch && seq >= ch.counted) ch.unread = 0; // read on another device
    drawChats();
    drawMessages(chat);
  });

  c.on('error', (err) => console.warn('chatd:', err.message));
}

/** @type {ReturnType<typeof setInterval> | undefined} the reconnect countdown's ticker */
let countdown;

/**
 * reconnectBanner says the connection is lost and counts down to the next
 * try (the SDK's retryInMs), second by second.
 * @param {number} at when the next try starts (ms since the epoch)
 */
function reconnectBanner(at) {
  const tick = () => {
    const s = Math.ceil((at - Date.now()) / 1000);
    $('banner-text').textContent = s > 0 ? `Connection lost. Reconnecting in ${s} s…` : 'Connection lost. Reconnecting…';
  };
  banner('reconnecting', '');
  tick();
  countdown = setInterval(tick, 250);
}

/** closedText is why the client stopped for good, in words. @param {number} [code] */
function closedText(code) {
  if (code === 4401) return 'The server refused the token (wrong or expired): sign in again.';
  if (code === 4003) return 'This account connected again from the same device elsewhere, so this tab stopped.';
  return 'Disconnected from the server.';
}

/** @param {'connecting'|'reconnecting'|'closed'|'open'} state @param {string} text @param {boolean} [signInAgain] */
function banner(state, text, signInAgain = false) {
  clearInterval(countdown);
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
      const list = await api().listChats();
      for (const ch of list) {
        const had = S.chats.get(ch.id);
        if (!had) api().track(ch.id, ch.lastSeq ?? 0);
        const unread = isReading(ch.id) ? 0 : ch.unread ?? 0;
        S.chats.set(ch.id, { ...had, ...ch, unread, counted: Math.max(had?.counted ?? 0, ch.lastSeq ?? 0), active: had?.active ?? Date.parse(ch.createdAt) });
      }
      drawChats();
      previews();
      readPositions();
      if (S.want && S.chats.has(S.want)) openChat(S.want);
      else if (S.want) {
        $('no-chat').textContent = `Chat ${S.want} is not one of yours.`;
        S.want = null;
      }
    } catch (err) {
      console.warn('chatd: list chats:', errText(err));
    } finally {
      S.refreshing = null;
    }
  })();
  return S.refreshing;
}

/**
 * previews reads the newest messages of each listed chat whose last message
 * the list does not show yet, for its preview line.
 */
function previews() {
  const want = [...S.chats.values()].filter((ch) => ch.lastSeq > 0 && !ch.last && !ch.previewing).slice(0, 50);
  for (const ch of want) {
    ch.previewing = true;
    api().history(ch.id, { before: ch.lastSeq + 1, limit: 5 })
      .then((page) => {
        for (const m of page.messages) noteLast(ch, m);
        drawChats();
      })
      .catch((err) => console.warn('chatd: preview:', errText(err)))
      .finally(() => { ch.previewing = false; });
  }
}

/** noteLast makes m the chat's preview when it is the newest message seen. @param {any} ch @param {any} m */
function noteLast(ch, m) {
  if (!m?.seq || (ch.last && ch.last.seq > m.seq)) return;
  ch.last = { id: m.id, seq: m.seq, from: m.from, body: m.body, ts: m.ts, deleted: !!m.deleted };
  const t = Date.parse(m.ts);
  if (t) ch.active = Math.max(ch.active ?? 0, t);
}

/**
 * readPositions reads how far each member has read in each chat
 * (members_read of GET /api/chats). Receipts arrive only while connected,
 * so without this a reloaded page would show read messages as unread. The
 * SDK's Chat does not carry the field, so the page asks chatd itself.
 */
async function readPositions() {
  try {
    const resp = await fetch('/api/chats', { headers: { Authorization: `Bearer ${S.token}` } });
    if (!resp.ok) throw new Error(`http ${resp.status}`);
    const { chats } = await resp.json();
    for (const ch of chats ?? []) {
      for (const [user, seq] of Object.entries(ch.members_read ?? {})) noteRead(ch.id, user, Number(seq));
    }
    if (S.open) drawMessages(S.open);
  } catch (err) {
    console.warn('chatd: read positions:', errText(err));
  }
}

/** noteRead keeps the highest seq user has read in chat. @param {string} chat @param {string} user @param {number} seq */
function noteRead(chat, user, seq) {
  let m = S.readers.get(chat);
  if (!m) S.readers.set(chat, (m = new Map()));
  m.set(user, Math.max(m.get(user) ?? 0, seq));
}

async function refreshPresence() {
  try {
    const all = await api().presence();
    for (const [user, p] of Object.entries(all)) S.presence.set(user, p);
    drawChats();
    drawHead();
  } catch (err) {
    console.warn('chatd: presence:', errText(err));
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
    const last = ch.last;
    const sig = JSON.stringify([title, ch.unread, chatPresence(ch)?.online, typing, S.open === ch.id, ch.kind, last]);
    if (btn.dataset.sig !== sig) {
      btn.dataset.sig = sig;
      btn.dataset.title = title;
      const preview = !last ? '' : last.deleted ? 'message deleted' : `${last.from === S.me ? 'You: ' : ch.kind === 'group' ? `${last.from}: ` : ''}${last.body}`;
      fill(
        btn,
        dot(chatPresence(ch)),
        el('span', { class: 'lines' },
          el('span', { class: 'line' },
            el('span', { class: 'name' }, title),
            ch.kind === 'group' ? el('span', { class: 'kind' }, 'group') : null,
            last ? el('time', { class: 'when', datetime: last.ts, dataset: { testid: 'chat-time' } }, listTime(last.ts)) : null),
          el('span', { class: 'line' },
            typing
              ? el('span', { class: 'typing-hint' }, 'typing…')
              : el('span', { class: 'last', dataset: { testid: 'chat-last' } }, preview.slice(0, 200)),
            ch.unread > 0 ? el('span', { class: 'badge', dataset: { testid: 'unread' }, 'aria-label': `${ch.unread} unread` }, String(ch.unread)) : null)),
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
  const bad = users.find((u) => !/^[A-Za-z0-9_-]{1,64}$/.test(u));
  if (bad) {
    err.textContent = `“${bad.slice(0, 64)}” is not a user name: names are 1–64 letters, digits, _ or -.`;
    return;
  }
  if (kind === 'direct' && users.length !== 1) {
    err.textContent = 'A direct chat is with exactly one other user: for more, make a group.';
    return;
  }
  if (kind === 'direct' && users[0] === S.me) {
    err.textContent = 'A direct chat is with someone else: type another user’s name.';
    return;
  }
  try {
    const ch = kind === 'direct' ? await api().directChat(users[0]) : await api().createGroup(users, title);
    if (!S.chats.has(ch.id)) {
      api().track(ch.id, ch.lastSeq ?? 0);
      S.chats.set(ch.id, { ...ch, unread: 0, counted: ch.lastSeq ?? 0, active: Date.now() });
    }
    /** @type {HTMLFormElement} */ (e.target).reset();
    drawChats();
    go(ch.id);
    refreshPresence();
  } catch (x) {
    err.textContent = humanError(x, kind === 'direct' ? 'Could not start the chat' : 'Could not make the group');
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
  let topSeq = 0;
  let topID = '';
  for (const e of v.msgs.values()) {
    if (e.id && e.seq && e.seq > topSeq) {
      topSeq = e.seq;
      topID = e.id;
    }
  }
  if (!topID || topSeq <= v.readSent) return;
  v.readSent = topSeq;
  Promise.resolve(api().markRead(chat, topID)).catch(() => {
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
    const page = await api().history(chat, { before: v.before, limit: PAGE });
    for (const m of page.messages) mergeMessage(v, m, false);
    const ch = S.chats.get(chat);
    if (ch) for (const m of page.messages) noteLast(ch, m);
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
    $('history-start').textContent = humanError(err, 'Could not load the history');
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
  const sent = v.msgs.get(`cid:${m.cid}`);
  const own = sent && m.from === S.me ? sent : undefined;
  if (own) v.msgs.delete(own.key);
  const had = v.msgs.get(m.id);
  if (had && !live) return;
  // The row shown since the send becomes the message's own, so what the
  // user opened on it (an edit, the delete question, a tap's actions) and
  // the focus inside it stay.
  /** @type {Entry} */
  const e = had ?? own ?? { key: m.id, cid: m.cid, from: m.from, body: '', deleted: false, reactions: {}, status: 'accepted' };
  if (own && S.actionsFor === own.key) S.actionsFor = m.id;
  e.key = m.id;
  e.id = m.id;
  e.seq = m.seq;
  e.ts = m.ts;
  e.status = 'accepted';
  setState(e, m);
  if (own?.editing && e !== own) Object.assign(e, { editing: own.editing, draft: own.draft });
  if (own?.confirming) e.confirming = true;
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
  // Over the limit the counter already says so and Send is disabled: the
  // text stays where it can be shortened.
  if (utf8Length(body) > S.maxBody) return drawCount();
  box.value = '';
  drawCount();
  // The server passes the next typing frame at once after a send (its 3 s
  // interval restarts), so the next keystroke must not wait for ours.
  S.lastTypingSent = 0;
  const v = /** @type {View} */ (S.views.get(chat));
  const cid = crypto.randomUUID();
  /** @type {Entry} */
  const e = { key: `cid:${cid}`, cid, from: S.me, body, deleted: false, reactions: {}, status: 'sending' };
  v.msgs.set(e.key, e);
  drawMessages(chat, { bottom: true });
  await deliver(chat, v, e);
}

/**
 * deliver sends an own entry (again, for a retry: the same cid, so a send
 * that did reach the server is not stored twice).
 * @param {string} chat @param {View} v @param {Entry} e
 */
async function deliver(chat, v, e) {
  try {
    const a = await api().send(chat, e.body, { cid: e.cid });
    // The SDK hands the accepted message out as soon as its chat's seqs are
    // contiguous; until then this row stands for it.
    if (v.msgs.get(e.key) === e) Object.assign(e, { status: 'accepted', id: a.id, seq: a.seq, ts: a.ts });
    const ch = S.chats.get(chat);
    if (ch) {
      noteLast(ch, { id: a.id, seq: a.seq, ts: a.ts, from: S.me, body: e.body });
      drawChats();
    }
  } catch (err) {
    const box = /** @type {HTMLTextAreaElement} */ ($('compose'));
    if (/** @type {{code?: string}} */ (err)?.code === 'too_large' && !box.value && S.open === chat) {
      // Under the byte limit yet too large (its escaped form in a large
      // group): back into the composer to be shortened, not a dead bubble.
      v.msgs.delete(e.key);
      box.value = e.body;
      drawCount();
      alertError('Not sent: the message is too long for this chat. Shorten it and send again.');
    } else {
      Object.assign(e, { status: 'failed', error: humanError(err, 'Not sent') });
    }
  }
  drawMessages(chat);
}

/** retry sends a failed entry again. @param {string} chat @param {Entry} e */
function retry(chat, e) {
  const v = S.views.get(chat);
  if (!v) return;
  e.status = 'sending';
  drawMessages(chat);
  deliver(chat, v, e);
}

/** editFailed takes a failed entry's text back into the composer. @param {string} chat @param {Entry} e */
function editFailed(chat, e) {
  const box = /** @type {HTMLTextAreaElement} */ ($('compose'));
  S.views.get(chat)?.msgs.delete(e.key);
  box.value = box.value ? `${e.body}\n${box.value}` : e.body;
  drawMessages(chat);
  drawCount();
  box.focus();
}

/** fitCompose grows the composer with its text, up to its CSS max-height. */
function fitCompose() {
  const box = $('compose');
  box.style.height = 'auto';
  box.style.height = `${box.scrollHeight + 2}px`;
}

/**
 * drawCount shows the composer's size in bytes (the unit of the server's
 * limit) once it nears the limit, and disables Send over it.
 */
function drawCount() {
  fitCompose();
  const n = utf8Length(/** @type {HTMLTextAreaElement} */ ($('compose')).value.trim());
  const max = S.maxBody;
  const over = n > max;
  const count = $('compose-count');
  const fmt = (/** @type {number} */ x) => x.toLocaleString('en');
  count.hidden = n < max * COUNT_FROM;
  count.textContent = over ? `${fmt(n)} / ${fmt(max)} bytes: too long, shorten it to send` : `${fmt(n)} / ${fmt(max)} bytes`;
  count.classList.toggle('over', over);
  /** @type {HTMLButtonElement} */ ($('send')).disabled = over;
  $('compose').setAttribute('aria-invalid', String(over));
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
  drawCount();
  fitCompose();
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
  if (e.status === 'failed') return e.error ?? 'Not sent.';
  const by = [...(readers?.entries() ?? [])].filter(([u, s]) => u !== S.me && e.seq && s >= e.seq).map(([u]) => u).sort();
  return by.length ? `read by ${by.join(', ')}` : 'accepted';
}

/** drawEntry returns the entry's row, rebuilt only when what it shows changed. */
function drawEntry(/** @type {string} */ chat, /** @type {Entry} */ e, /** @type {Map<string, number> | undefined} */ readers) {
  const mine = e.from === S.me;
  const state = mine && !e.deleted ? stateText(e, readers) : '';
  const open = S.actionsFor === e.key;
  const sig = JSON.stringify([e.id, e.seq, e.body, e.deleted, e.editedAt, e.reactions, e.status, state, e.editing, e.confirming, open]);
  if (e.node && e.drawn === sig) return e.node;
  const hadFocus = e.node?.contains(document.activeElement) ? /** @type {HTMLElement} */ (document.activeElement).dataset.testid : undefined;
  const li = e.node ?? el('li', { class: 'msg', onclick: (/** @type {MouseEvent} */ ev) => toggleActions(chat, e, ev) });
  e.node = li;
  e.drawn = sig;
  li.className = `msg${mine ? ' mine' : ''}${e.deleted ? ' deleted' : ''}${open || e.confirming ? ' open' : ''}`;
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
    : el('p', { class: 'body', dataset: { testid: 'message-body' } }, ...(e.deleted ? ['message deleted'] : linkify(e.body)));

  const reactions = el('div', { class: 'reactions', dataset: { testid: 'reactions' } },
    ...Object.entries(e.reactions).map(([emoji, users]) =>
      el('button', {
        type: 'button', class: 'chip', dataset: { testid: 'reaction', emoji },
        'aria-pressed': String(users.includes(S.me)), title: users.join(', '),
        'aria-label': `${emoji} ${users.length}: ${users.join(', ')}`,
        onclick: () => react(chat, e, emoji),
      }, el('span', { class: 'emoji' }, emoji), ` ${users.length}`)),
  );

  const canAct = !!e.id && !e.deleted && !e.editing;
  const actions = canAct && e.confirming
    ? el('div', { class: 'actions confirm', role: 'group', 'aria-label': 'Delete this message?' },
      el('span', { class: 'ask' }, 'Delete for everyone?'),
      el('button', { type: 'button', class: 'act danger', dataset: { testid: 'delete-confirm' }, onclick: () => del(chat, e) }, 'Delete'),
      el('button', { type: 'button', class: 'act', dataset: { testid: 'delete-cancel' }, onclick: () => askDelete(chat, e, false) }, 'Cancel'))
    : canAct
    ? el('div', { class: 'actions', role: 'group', 'aria-label': `Actions on ${e.from}'s message` },
      ...EMOJIS.map((emoji) => el('button', {
        type: 'button', class: 'act', dataset: { testid: 'react', emoji }, 'aria-label': `React ${emoji}`,
        onclick: () => react(chat, e, emoji),
      }, el('span', { class: 'emoji' }, emoji))),
      mine ? el('button', { type: 'button', class: 'act', dataset: { testid: 'edit' }, onclick: () => startEdit(chat, e) }, 'Edit') : null,
      mine ? el('button', { type: 'button', class: 'act', dataset: { testid: 'delete' }, onclick: () => askDelete(chat, e, true) }, 'Delete') : null,
    )
    : e.status === 'failed'
    ? el('div', { class: 'actions failed', role: 'group', 'aria-label': 'Message not sent' },
      el('button', { type: 'button', class: 'act', dataset: { testid: 'retry' }, onclick: () => retry(chat, e) }, 'Retry'),
      el('button', { type: 'button', class: 'act', dataset: { testid: 'edit-failed' }, onclick: () => editFailed(chat, e) }, 'Edit'))
    : null;

  fill(
    li,
    head, body, reactions, actions,
    mine && state ? el('p', { class: `state ${e.status}`, dataset: { testid: 'message-state' } }, state) : null,
  );
  if (e.editing) /** @type {HTMLInputElement} */ (li.querySelector('input'))?.focus();
  else if (e.confirming && !hadFocus) /** @type {HTMLElement | null} */ (li.querySelector('[data-testid="delete-cancel"]'))?.focus();
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
    await api().edit(chat, e.id, body);
  } catch (err) {
    alertError(humanError(err, 'The edit was not saved'));
  }
}

/**
 * toggleActions opens a message's actions on a tap (a touch screen has no
 * hover), and closes them on a second tap or a tap on another message. A
 * tap on a button, link or form inside the message is that control's.
 * @param {string} chat @param {Entry} e @param {MouseEvent} ev
 */
function toggleActions(chat, e, ev) {
  if (/** @type {Element} */ (ev.target).closest('button, a, input, form')) return;
  if (getSelection()?.toString()) return; // selecting text, not tapping
  S.actionsFor = S.actionsFor === e.key ? null : e.key;
  for (const x of S.views.get(chat)?.msgs.values() ?? []) if (x !== e) x.confirming = false;
  drawMessages(chat);
}

// A tap outside every message, or Escape, closes the actions a tap opened.
document.addEventListener('click', (ev) => {
  // The path as dispatched: the tap that opened them redrew the bubble, so
  // its target may be out of the document by now.
  const onMessage = ev.composedPath().some((n) => n instanceof Element && n.classList.contains('msg'));
  if (S.actionsFor && S.open && !onMessage) {
    S.actionsFor = null;
    drawMessages(S.open);
  }
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && S.actionsFor && S.open) {
    S.actionsFor = null;
    drawMessages(S.open);
  }
});

/** askDelete shows (or takes back) the question before a delete. @param {string} chat @param {Entry} e @param {boolean} on */
function askDelete(chat, e, on) {
  e.confirming = on;
  if (!on) S.actionsFor = null;
  drawMessages(chat);
  if (!on) /** @type {HTMLElement | null} */ (e.node?.querySelector('[data-testid="delete"]'))?.focus();
}

async function del(/** @type {string} */ chat, /** @type {Entry} */ e) {
  e.confirming = false;
  S.actionsFor = null;
  drawMessages(chat);
  if (!e.id) return;
  try {
    await api().delete(chat, e.id);
  } catch (err) {
    alertError(humanError(err, 'The message was not deleted'));
  }
}

async function react(/** @type {string} */ chat, /** @type {Entry} */ e, /** @type {string} */ emoji) {
  if (!e.id) return;
  const on = !(e.reactions[emoji] ?? []).includes(S.me);
  try {
    await api().react(chat, e.id, emoji, on);
  } catch (err) {
    alertError(humanError(err, 'The reaction was not saved'));
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
