// The type declarations (index.d.ts) hold for the SDK as its README uses it:
// the README's `js` blocks, put in one async function, type-check against
// index.d.ts with TypeScript's strict checks. A declaration that drifts from
// the documented API, or an example a TypeScript user could not compile,
// fails here. The helpers the examples call (fetchMyToken, show, …) are
// declared below; a new one in the README is a name to add.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const helpers = `
declare function fetchMyToken(): Promise<string>;
declare function show(m: unknown): void;
declare function redraw(m: unknown): void;
declare function showTyping(chat: string, user: string): void;
declare function dot(user: string, online: boolean): void;
declare function readBy(chat: string, user: string, seq: number): void;
declare function banner(text: string): void;
declare const someId: string;
`;

test('the README examples type-check against index.d.ts', () => {
  const readme = readFileSync(join(sdk, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length > 0, 'README.md has no js block');
  const body = blocks.join('\n').split('\n')
    .filter((line) => !line.startsWith('import '))
    .join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'chatd-sdk-types-'));
  try {
    const file = join(dir, 'readme.ts');
    writeFileSync(file, `import { ChatClient } from ${JSON.stringify(join(sdk, 'index'))};\n${helpers}\nexport async function readme() {\n${body}\n}\n`);
    const tsc = spawnSync(join(sdk, 'node_modules', '.bin', 'tsc'), [
      '--noEmit', '--strict', '--target', 'es2022', '--module', 'es2022', '--moduleResolution', 'bundler', file,
    ], { encoding: 'utf8' });
    assert.equal(tsc.error, undefined, `run tsc (npm ci in web/sdk installs it): ${tsc.error}`);
    assert.equal(tsc.status, 0, `tsc on the README's examples:\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The demo app (web/demo, plain ES modules with JSDoc types, no build step)
// type-checks against index.d.ts with TypeScript's strict checks, as it
// imports the SDK from /sdk/index.js: a call the SDK does not have, a field
// it does not hand out, or a value that may be null where the app assumes
// one fails here rather than in a user's browser.
test('the demo app type-checks against index.d.ts', () => {
  const demo = resolve(sdk, '..', 'demo');
  const dir = mkdtempSync(join(tmpdir(), 'chatd-demo-types-'));
  try {
    const config = join(dir, 'tsconfig.json');
    writeFileSync(config, JSON.stringify({
      compilerOptions: {
        allowJs: true, checkJs: true, noEmit: true, strict: true,
        target: 'es2022', module: 'es2022', moduleResolution: 'bundler', lib: ['es2022', 'dom', 'dom.iterable'],
        paths: { '/sdk/index.js': [join(sdk, 'index.d.ts')] },
      },
      files: [join(demo, 'app.js'), join(demo, 'render.js')],
    }));
    const tsc = spawnSync(join(sdk, 'node_modules', '.bin', 'tsc'), ['-p', config], { encoding: 'utf8' });
    assert.equal(tsc.error, undefined, `run tsc (npm ci in web/sdk installs it): ${tsc.error}`);
    assert.equal(tsc.status, 0, `tsc on web/demo:\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
