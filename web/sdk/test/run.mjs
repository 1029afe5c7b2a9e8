// Test runner: builds chatd once for every test file (unless CHATD_BIN names
// a binary), then runs node's test runner on test/*.test.mjs. Node 20 needs
// --experimental-websocket for the global WebSocket; Node 22 has it by
// default, so the flag is passed only when it is missing.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 10)) {
  // Node 18 (Debian bookworm's nodejs) has no WebSocket at all.
  console.error(`node ${process.versions.node}: the SDK's tests need Node >= 20.10 (its WebSocket)`);
  process.exit(1);
}
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../..');
const env = { ...process.env };
let built;
if (!env.CHATD_BIN) {
  built = mkdtempSync(join(tmpdir(), 'chatd-sdk-bin-'));
  env.CHATD_BIN = join(built, 'chatd');
  console.log(`building chatd into ${env.CHATD_BIN}`);
  const b = spawnSync('go', ['build', '-o', env.CHATD_BIN, './cmd/chatd'], { cwd: repo, stdio: 'inherit' });
  if (b.status !== 0) {
    console.error('go build ./cmd/chatd failed; set CHATD_BIN to a chatd binary to skip the build');
    process.exit(1);
  }
}
const args = [];
if (typeof globalThis.WebSocket === 'undefined') args.push('--experimental-websocket');
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort().map((f) => join(here, f));
// One file at a time: each starts its own chatd (with a PostgreSQL), and the
// machines this runs on are small.
args.push('--test', '--test-concurrency=1', ...files);
const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
if (built) rmSync(built, { recursive: true, force: true });
process.exit(r.status ?? 1);
