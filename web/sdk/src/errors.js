// Errors the SDK hands to callers, and the meaning of close codes.

/**
 * A `rejected` answer to a send or an event: nothing was stored.
 * `temporary` is true for overloaded, rate_limited and unavailable: the same cid may
 * succeed later (send again with `{cid}`).
 */
export class RejectedError extends Error {
  /** @param {string} cid @param {string} code @param {string} message */
  constructor(cid, code, message) {
    super(`send ${cid} rejected: ${code}: ${message}`);
    this.name = 'RejectedError';
    this.cid = cid;
    this.code = code;
    this.temporary = code === 'overloaded' || code === 'rate_limited' || code === 'unavailable';
  }
}

/** A REST call's error answer (status and the body's `code`). */
export class APIError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(`http ${status} ${code}: ${message}`);
    this.name = 'APIError';
    this.status = status;
    this.code = code;
    /** @type {number | undefined} the answer's Retry-After (429, 503), in ms */
    this.retryAfterMs = undefined;
  }
}

/** The client was closed, or an operation needs a connection that is not there. */
export class ClosedError extends Error {
  /** @param {string} [message] @param {number} [code] close code that ended the client, if any */
  constructor(message = 'client closed', code = undefined) {
    super(message);
    this.name = 'ClosedError';
    if (code !== undefined) this.code = code;
  }
}

/**
 * The token function threw (or returned no token) before the client ever
 * connected: an app's sign-in problem, not a network failure. `cause` is
 * what the function threw.
 */
export class TokenError extends Error {
  /** @param {unknown} cause */
  constructor(cause) {
    super(`token function failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'TokenError';
    this.cause = cause;
  }
}

// Close codes of the wire contract (docs/protocol.md "Close codes").
export const CloseAbandoned = 4000;
export const CloseOverloaded = 4001;
export const CloseIdle = 4002;
export const CloseSuperseded = 4003;
export const CloseRate = 4008;
export const CloseProtocol = 4400;
export const CloseUnauthorized = 4401;

const meanings = {
  0: 'network failure; reconnecting',
  1000: 'closed normally',
  1001: 'server going away; reconnecting and resyncing from history',
  1006: 'connection lost; reconnecting and resyncing from history',
  4000: 'abandoned: messages were not acked in time; resyncing from history',
  4001: 'overloaded: too many un-acked messages; resyncing from history',
  4002: 'idle: the connection was silent too long; reconnecting',
  4003: 'superseded: this user and device connected again elsewhere; not reconnecting',
  4008: 'rate or credit limit violated; reconnecting after a pause',
  4400: 'protocol violation; reconnecting',
  4401: 'unauthorized: the token was refused or expired; signing in again',
};

/**
 * closeMeaning is the human text of a close code, for a banner. 0 means the
 * connection failed without a close frame.
 * @param {number} code
 * @returns {string}
 */
export function closeMeaning(code) {
  return meanings[code] ?? `closed with code ${code}; reconnecting`;
}
