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
