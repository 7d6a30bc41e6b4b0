#!/usr/bin/env node
// npm `postinstall`: applies the reviewed dependency patches in patches/ with patch-package (docs/semantics.md,
// "The PostgreSQL driver"). Plain JavaScript: it runs right after `npm ci`, before anything is compiled.
//
// Only in this repository's own install (a clone's or CI's `npm ci`; the poller image's build stage, which installs
// without scripts, runs patch-package itself). Installed as a dependency of another project it does nothing: patch-package patches the node_modules
// of the folder it runs in, not the project that installed this package (whose postgres.js may be hoisted above
// it, and which npm 11 does not run a dependency's scripts for unless approved), and patch-package is a dev
// dependency that such an install does not have. There the engine's own guard (lambda/stores/postgres/guarded-begin.ts)
// keeps a lost connection from ending the process.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

if (ROOT.split(sep).includes('node_modules')) {
  process.exit(0);
}

let bin;
try {
  bin = createRequire(import.meta.url).resolve('patch-package/index.js');
} catch {
  process.stderr.write(
    'postinstall: patch-package is not installed, so patches/ (a fix of postgres.js) was not applied: install the dev dependencies (npm ci without --omit=dev)\n',
  );
  process.exit(1);
}
// --error-on-fail: a patch that no longer applies (a changed dependency version) fails the install, on a
// developer's machine too, instead of leaving the driver unpatched with a warning.
const run = spawnSync(process.execPath, [bin, '--error-on-fail'], { cwd: ROOT, stdio: 'inherit' });
process.exit(run.status ?? 1);
