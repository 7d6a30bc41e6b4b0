import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type postgres from 'postgres';
import { afterAll } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The reviewed postgres.js patch that `npm ci` applies (package.json `postinstall`, the Dockerfile). */
export const POSTGRES_PATCH = join(ROOT, 'patches/postgres+3.4.9.patch');

/**
 * postgres.js's `nextWrite` in a minified bundle (esbuild with `keepNames`, as lib/bundled-function.ts builds):
 * patched, it checks its socket before writing and settles the queries with `CONNECTION_CLOSED`.
 */
export const PATCHED_NEXT_WRITE =
  /function ([\w$]+)\([\w$]+\)\{if\(!([\w$]+)\)return [^;]*"CONNECTION_CLOSED"[^;]*;let [\w$]+=\2\.write\([^}]*\}[\w$]+\(\1,"nextWrite"\)/;

/** postgres.js 3.4.9's own `nextWrite` in a minified bundle: it writes to its socket without looking. */
export const UNPATCHED_NEXT_WRITE =
  /function ([\w$]+)\([\w$]+\)\{let [\w$]+=[\w$]+\.write\([^}]*\}[\w$]+\(\1,"nextWrite"\)/;

/**
 * postgres.js as a project that installs this package gets it: this checkout's `node_modules/postgres` copied to a
 * temporary folder with {@link POSTGRES_PATCH} reversed (the patch applies to this repository's own install only).
 * Reversing fails when the checkout's copy is not patched. The copy is deleted after the calling file.
 */
export async function unpatchedPostgres(): Promise<typeof postgres> {
  const root = mkdtempSync(join(tmpdir(), 'unpatched-postgres-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  cpSync(join(ROOT, 'node_modules/postgres'), join(root, 'node_modules/postgres'), { recursive: true });
  execFileSync('git', ['apply', '--reverse', '-p1', POSTGRES_PATCH], { cwd: root, stdio: 'pipe' });
  const module = (await import(pathToFileURL(join(root, 'node_modules/postgres/src/index.js')).href)) as {
    default: typeof postgres;
  };
  return module.default;
}
