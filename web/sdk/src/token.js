// Reading a JWT's exp, unverified: the client has no secret and only needs to
// know when the server will stop honouring the token (pkg/client/token.go).

/**
 * tokenExp returns the token's `exp` in ms since the epoch, or 0 when the
 * token has no readable exp (not a JWT, or opaque): nothing to refresh ahead of.
 * @param {string} tok
 * @returns {number}
 */
export function tokenExp(tok) {
  const parts = String(tok).split('.');
  if (parts.length !== 3) return 0;
  try {
    let b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    b64 += '='.repeat((4 - (b64.length % 4)) % 4);
    const claims = JSON.parse(atob(b64));
    const exp = Number(claims.exp);
    return Number.isFinite(exp) && exp > 0 ? Math.floor(exp) * 1000 : 0;
  } catch {
    return 0;
  }
}

/**
 * tokenSub returns the token's `sub`, unverified, or ''.
 * @param {string} tok
 */
export function tokenSub(tok) {
  const parts = String(tok).split('.');
  if (parts.length !== 3) return '';
  try {
    let b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    b64 += '='.repeat((4 - (b64.length % 4)) % 4);
    return String(JSON.parse(atob(b64)).sub ?? '');
  } catch {
    return '';
  }
}
