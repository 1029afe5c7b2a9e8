// Reconnect delays: exponential growth from min, capped at max, with full
// jitter, so that many clients dropped at once (a chatd restart) do not come
// back in lockstep (pkg/client/backoff.go).

/**
 * backoffDelay returns the wait before reconnect attempt n (0-based): a
 * uniformly random number of ms in [min, min(max, min·2ⁿ)].
 * @param {number} n @param {number} min @param {number} max
 * @returns {number}
 */
export function backoffDelay(n, min, max) {
  const ceil = Math.min(max, min * 2 ** Math.min(n, 52));
  if (ceil <= min) return min;
  return min + Math.floor(Math.random() * (ceil - min + 1));
}
