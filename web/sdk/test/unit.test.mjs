// Unit tests of the pure parts: the tracker's order and dedupe, backoff
// bounds, reading a token's exp, and applying events to a message's state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tracker } from '../src/tracker.js';
import { backoffDelay } from '../src/backoff.js';
import { tokenExp, tokenSub } from '../src/token.js';
import { applyEvent, toMessage } from '../src/state.js';
import { closeMeaning } from '../src/errors.js';

const e = (seq, chat = 'c') => ({ chat, seq });

test('tracker: hands out each seq once, in order, holding frames behind a gap', () => {
  const t = new Tracker();
  assert.deepEqual(t.add(e(2)), { ready: [], dup: false });
  assert.deepEqual(t.add(e(3)), { ready: [], dup: false });
  assert.equal(t.hasGap('c'), true);
  assert.deepEqual(t.add(e(3)), { ready: [], dup: true }, 'a held seq is a duplicate');
  assert.deepEqual(t.add(e(1)).ready.map((x) => x.seq), [1, 2, 3]);
  assert.equal(t.hasGap('c'), false);
  assert.deepEqual(t.add(e(2)), { ready: [], dup: true });
  assert.equal(t.contiguous('c'), 3);
  assert.deepEqual(t.add(e(1, 'd')).ready.map((x) => x.seq), [1], 'an unknown chat is tracked from 0');
});

test('tracker: track from a resume point, skip purged seqs, drop the newest past maxHeld', () => {
  const t = new Tracker(2);
  assert.equal(t.track('c', 10), true);
  assert.equal(t.track('c', 0), false, 'a tracked chat keeps its resume point');
  assert.deepEqual(t.add(e(10)), { ready: [], dup: true });
  t.add(e(13));
  t.add(e(15));
  t.add(e(14)); // over maxHeld: 15, the newest, is dropped
  assert.deepEqual(t.skipTo('c', 12).map((x) => x.seq), [13, 14]);
  assert.equal(t.contiguous('c'), 14);
  assert.deepEqual(t.add(e(15)).ready.map((x) => x.seq), [15]);
});

test('backoff: full jitter within [min, min(max, min·2^n)]', () => {
  for (let n = 0; n < 70; n++) {
    for (let i = 0; i < 50; i++) {
      const d = backoffDelay(n, 100, 10000);
      assert.ok(d >= 100 && d <= Math.min(10000, 100 * 2 ** n), `attempt ${n}: ${d}`);
    }
  }
  const spread = new Set(Array.from({ length: 100 }, () => backoffDelay(10, 100, 10000)));
  assert.ok(spread.size > 50, 'delays must be jittered');
});

test('token: exp and sub read from the payload, unverified; junk has none', () => {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const tok = `${b64({ alg: 'HS256' })}.${b64({ sub: 'alice', exp: 1767225600 })}.sig`;
  assert.equal(tokenExp(tok), 1767225600000);
  assert.equal(tokenSub(tok), 'alice');
  assert.equal(tokenExp('opaque'), 0);
  assert.equal(tokenExp('a.!!!.c'), 0);
});

test('state: events apply in seq order; replaying them over a history state changes nothing', () => {
  const base = { id: 'm', cid: 'k', chat: 'c', seq: 1, from: 'alice', body: 'v1', ts: 't1' };
  const evs = [
    { kind: 'reaction', from: 'bob', emoji: '👍', on: true },
    { kind: 'edit', body: 'v2', ts: 't2' },
    { kind: 'reaction', from: 'carol', emoji: '👍', on: true },
    { kind: 'reaction', from: 'bob', emoji: '👍', on: false },
    { kind: 'edit', body: 'v3', ts: 't3' },
  ];
  const live = toMessage(base);
  for (const ev of evs) applyEvent(live, ev);
  assert.deepEqual({ body: live.body, editedAt: live.editedAt, reactions: live.reactions }, { body: 'v3', editedAt: 't3', reactions: { '👍': ['carol'] } });
  // History gives the current state; the events that follow are applied again.
  const hist = toMessage({ ...base, body: 'v3', edited_at: 't3', reactions: { '👍': ['carol'] } });
  for (const ev of evs) applyEvent(hist, ev);
  assert.deepEqual(hist, live);
  applyEvent(live, { kind: 'delete' });
  applyEvent(live, { kind: 'edit', body: '', ts: 't4' });
  applyEvent(live, { kind: 'reaction', from: 'dan', emoji: '🎉', on: true });
  assert.deepEqual({ body: live.body, deleted: live.deleted, reactions: live.reactions }, { body: '', deleted: true, reactions: {} });
});

test('closeMeaning: every contract code has a text', () => {
  for (const code of [0, 1000, 1001, 1006, 4000, 4001, 4002, 4003, 4008, 4400, 4401]) assert.doesNotMatch(closeMeaning(code), /^closed with code/);
  assert.match(closeMeaning(4000), /resyncing from history/);
  assert.match(closeMeaning(4999), /4999/);
});
