// A real chatd for the browser tests: the binary (CHATD_BIN, or built from
// this repository with `go build`), in embedded mode (in-process NATS, a
// managed PostgreSQL) in a fresh data dir, on a free loopback port.

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, chmod, rm, mkdir } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * demoArgs run chatd as `make run` does for the demo (the development login),
 * with short keepalives, so an offline browser is noticed within seconds on
 * both sides (the SDK's read timeout is the larger of 3 pings and idle).
 */
export const demoArgs = ['--dev-login', '--ping-interval', '1s', '--idle-timeout', '4s', '--log-level', 'warn'];

/** chatdBinary returns CHATD_BIN, or builds cmd/chatd into dir. @param {string} dir */
export async function chatdBinary(dir) {
  if (process.env.CHATD_BIN) return process.env.CHATD_BIN;
  const out = join(dir, 'chatd');
  await run('go', ['build', '-o', out, './cmd/chatd'], { cwd: repo, maxBuffer: 16 << 20 });
  return out;
}

async function freePort() {
  const srv = createServer();
  await new Promise((ok, fail) => srv.listen(0, '127.0.0.1', ok).on('error', fail));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  await new Promise((ok) => srv.close(ok));
  return port;
}

/**
 * startChatd starts chatd and resolves once /readyz answers 200.
 * @param {{args?: string[], logPath?: string}} [opts]
 */
export async function startChatd(opts = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'chatd-e2e-'));
  // chatd runs its PostgreSQL as the postgres user when started as root;
  // that user must be able to reach the data dir.
  await chmod(dir, 0o755);
  const bin = await chatdBinary(dir);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = join(dir, 'data');
  const args = ['--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, ...(opts.args ?? [])];
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (/** @type {Buffer} */ b) => {
    log = (log + b.toString()).slice(-20000);
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  if (opts.logPath) {
    await mkdir(dirname(opts.logPath), { recursive: true });
    const f = createWriteStream(opts.logPath);
    proc.stdout.pipe(f);
    proc.stderr.pipe(f);
  }
  const exited = new Promise((ok) => proc.once('exit', (code, sig) => ok({ code, sig })));

  const deadline = Date.now() + 90_000;
  for (;;) {
    const gone = await Promise.race([exited, new Promise((ok) => setTimeout(() => ok(null), 200))]);
    if (gone) throw new Error(`chatd exited before ready: ${JSON.stringify(gone)}\n${log}`);
    try {
      const resp = await fetch(`${base}/readyz`);
      await resp.text();
      if (resp.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`chatd not ready within 90 s\n${log}`);
    }
  }

  return {
    base,
    dataDir,
    /** token prints a token with `chatd token`. @param {string} user */
    async token(user) {
      const { stdout } = await run(bin, ['token', user, '--data-dir', dataDir]);
      return stdout.trim();
    },
    /** devToken asks the development login. @param {string} user */
    async devToken(user) {
      const resp = await fetch(`${base}/api/dev/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ user }),
      });
      if (resp.status !== 200) throw new Error(`dev login ${user}: ${resp.status} ${await resp.text()}`);
      return (await resp.json()).token;
    },
    log: () => log,
    /** stop ends chatd (SIGTERM, then SIGKILL after 20 s) and removes its data dir. */
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(t);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
