// The dedupe and ordering core (pkg/client/tracker.go). Per chat it keeps the
// highest contiguous seq handed out and the frames held behind a gap: an event
// is ready exactly once, when every lower seq of its chat has been ready.
// Because seq is gapless and identifies an event inside its chat, chat+seq is
// the dedupe key (protocol.md duty 2). JavaScript runs one task at a time, so
// an add and the hand-off of what it made ready can never interleave.

/**
 * @typedef {{chat: string, seq: number}} Seqd
 * @typedef {{contig: number, held: Map<number, any>}} ChatState
 */

export class Tracker {
  /** @param {number} maxHeld frames held per chat behind a gap; past it the newest are dropped (they come back from history) */
  constructor(maxHeld = 4096) {
    this.maxHeld = maxHeld;
    /** @type {Map<string, ChatState>} */
    this.chats = new Map();
  }

  /**
   * track starts tracking chat with every seq up to after treated as handed
   * out. It returns false, changing nothing, when chat is already tracked.
   * @param {string} chat @param {number} after
   */
  track(chat, after = 0) {
    if (this.chats.has(chat)) return false;
    this.chats.set(chat, { contig: Math.max(after, 0), held: new Map() });
    return true;
  }

  /** @param {string} chat */
  untrack(chat) {
    this.chats.delete(chat);
  }

  /**
   * add offers one entry (anything with chat and seq). It returns the entries
   * now ready in seq order (none when held or dropped) and whether it was a
   * duplicate. A chat not tracked yet is tracked from seq 0.
   * @template {Seqd} T
   * @param {T} e
   * @returns {{ready: T[], dup: boolean}}
   */
  add(e) {
    if (!(e.seq > 0)) return { ready: [], dup: false };
    let cs = this.chats.get(e.chat);
    if (!cs) this.chats.set(e.chat, (cs = { contig: 0, held: new Map() }));
    if (e.seq <= cs.contig || cs.held.has(e.seq)) return { ready: [], dup: true };
    if (e.seq === cs.contig + 1) {
      cs.contig++;
      return { ready: release(cs, [e]), dup: false };
    }
    cs.held.set(e.seq, e);
    if (cs.held.size > this.maxHeld) cs.held.delete(Math.max(...cs.held.keys()));
    return { ready: [], dup: false };
  }

  /**
   * skipTo declares every seq up to seq of chat gone from history (purged
   * past retention): held entries up to it are released in order and the
   * resume point moves to seq. It returns what became ready.
   * @param {string} chat @param {number} seq
   */
  skipTo(chat, seq) {
    const cs = this.chats.get(chat);
    if (!cs || seq <= cs.contig) return [];
    const below = [...cs.held.keys()].filter((s) => s <= seq).sort((a, b) => a - b);
    const ready = below.map((s) => {
      const e = cs.held.get(s);
      cs.held.delete(s);
      return e;
    });
    cs.contig = seq;
    return release(cs, ready);
  }

  /** contiguous returns chat's resume point, or undefined when not tracked. @param {string} chat */
  contiguous(chat) {
    return this.chats.get(chat)?.contig;
  }

  /** @param {string} chat */
  hasGap(chat) {
    return (this.chats.get(chat)?.held.size ?? 0) > 0;
  }

  /** @returns {string[]} */
  list() {
    return [...this.chats.keys()].sort();
  }
}

/** release appends the held run that now follows contig. */
function release(cs, ready) {
  for (;;) {
    const e = cs.held.get(cs.contig + 1);
    if (e === undefined) return ready;
    cs.held.delete(cs.contig + 1);
    cs.contig++;
    ready.push(e);
  }
}
