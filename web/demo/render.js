// DOM rendering of the demo: small keyed updates instead of re-creating the
// lists, so a keyboard user's focus (a chat button, a message's Edit button)
// survives the live updates around it. Text always goes in as textContent.

/**
 * el makes an element: el('button', {type: 'button', class: 'x', dataset: {testid: 'y'}}, 'text', child).
 * @param {string} tag @param {Record<string, any>} [attrs] @param {...(Node|string|null|undefined|false)} kids
 */
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const kid of kids) if (kid !== undefined && kid !== null && kid !== false) e.append(kid);
  return e;
}

/**
 * fill replaces node's children with kids, skipping the absent ones
 * (replaceChildren would write null as text).
 * @param {Element} node @param {...(Node|string|null|undefined|false)} kids
 */
export function fill(node, ...kids) {
  node.replaceChildren(...kids.filter((k) => k !== undefined && k !== null && k !== false));
}

/**
 * syncList makes list's children exactly nodes, in order, moving only the
 * nodes that are out of place (moving a node would take focus from it).
 * @param {Element} list @param {Element[]} nodes
 */
export function syncList(list, nodes) {
  const keep = new Set(nodes);
  for (const c of [...list.children]) if (!keep.has(c)) c.remove();
  nodes.forEach((n, i) => {
    if (list.children[i] !== n) list.insertBefore(n, list.children[i] ?? null);
  });
}

/** time formats an RFC 3339 time as the local hour and minute. @param {string} [ts] */
export function time(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** lastSeen is a presence's human text. @param {{online: boolean, lastSeen?: string} | undefined} p */
export function presenceText(p) {
  if (!p) return 'offline';
  if (p.online) return 'online';
  if (!p.lastSeen) return 'offline';
  const d = new Date(p.lastSeen);
  const today = new Date().toDateString() === d.toDateString();
  return `last seen ${today ? time(p.lastSeen) : d.toLocaleString()}`;
}

/** dot is a presence dot with its meaning for screen readers. @param {{online: boolean} | undefined} p */
export function dot(p) {
  const online = !!p?.online;
  return el('span', {
    class: `dot ${online ? 'online' : 'offline'}`,
    dataset: { testid: 'presence', online: String(online) },
    role: 'img',
    'aria-label': online ? 'online' : 'offline',
  });
}

/** typingText: "alice is typing…", "alice and bob are typing…". @param {string[]} users */
export function typingText(users) {
  if (!users.length) return '';
  if (users.length === 1) return `${users[0]} is typing…`;
  if (users.length === 2) return `${users[0]} and ${users[1]} are typing…`;
  return `${users.length} people are typing…`;
}

/**
 * listTime is a chat list's time of its last message: the hour today, the
 * weekday within a week, else the date. @param {string} [ts]
 */
export function listTime(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return time(ts);
  if (now.getTime() - d.getTime() < 6 * 86400_000) return d.toLocaleDateString([], { weekday: 'short' });
  return d.toLocaleDateString([], { day: 'numeric', month: 'short' });
}

/** utf8Length is how many bytes text takes as UTF-8, the unit of chatd's body limit. @param {string} text */
export function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

// A link is http(s):// and what follows up to a space or a character that
// cannot be in an unquoted URL; trailing punctuation belongs to the sentence.
const URL_RE = /\bhttps?:\/\/[^\s<>"'`]+/gi;
const TRAILING = /[.,;:!?)\]}'"]+$/;

/**
 * linkify splits text into text nodes and links for its http and https URLs,
 * built as elements (never HTML), so a message cannot inject markup or a
 * javascript: link. Links open in a new tab without access to this page
 * (noopener), without telling the site where they came from (noreferrer),
 * and without the demo vouching for them (nofollow).
 * @param {string} text @returns {(string|HTMLElement)[]}
 */
export function linkify(text) {
  /** @type {(string|HTMLElement)[]} */
  const out = [];
  let at = 0;
  for (const m of text.matchAll(URL_RE)) {
    let href = m[0];
    const tail = href.match(TRAILING)?.[0] ?? '';
    // Keep a closing parenthesis that closes one inside the URL (wiki links).
    const keep = tail.startsWith(')') && href.slice(0, -tail.length).includes('(') ? 1 : 0;
    href = href.slice(0, href.length - tail.length + keep);
    let url;
    try {
      url = new URL(href);
    } catch {
      continue;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    const start = /** @type {number} */ (m.index);
    if (start > at) out.push(text.slice(at, start));
    out.push(el('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer nofollow' }, href));
    at = start + href.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

// What each error code means to someone using the demo.
const CODES = {
  too_large: 'it is too long',
  too_many_members: 'the group would have too many members',
  forbidden: 'you are not a member of this chat',
  not_found: 'that chat or message no longer exists',
  rate_limited: 'too many requests at once; wait a moment and try again',
  overloaded: 'the server is busy; try again in a moment',
  unavailable: 'the server is not available right now; try again in a moment',
  unauthorized: 'your sign-in has expired; sign in again',
  conflict: 'that cannot be done to this chat',
  cid_conflict: 'it clashed with an earlier request; try again',
  internal: 'the server had a problem; try again',
  invalid: 'the server did not accept it',
};

/**
 * humanError turns an SDK or REST error into a sentence: what failed
 * (doing) and why, in words. The protocol's text (status, code, the
 * server's message) goes to the console for whoever debugs.
 * @param {any} err @param {string} doing e.g. "Could not start the chat"
 */
export function humanError(err, doing) {
  if (err?.human) return String(err.message); // already a sentence (the demo's own)
  console.warn(`chatd: ${doing}:`, err?.message ?? err);
  const code = typeof err?.code === 'string' ? err.code : '';
  /** @type {string | undefined} */
  let why = CODES[/** @type {keyof typeof CODES} */ (code)];
  if (!why && (err instanceof TypeError || /failed to fetch|network/i.test(String(err?.message ?? '')))) why = 'the server cannot be reached';
  if (!why && err?.name === 'ClosedError') why = 'the connection is closed';
  return why ? `${doing}: ${why}.` : `${doing}.`;
}
