import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A copy of the checkout a test may change (add a handler, a migration) without touching the real one. */
export interface CheckoutCopy {
  /** The copy's root: run `npm start` or `node --import tsx bin/local.ts` with this as the working directory. */
  readonly root: string;
  /** Removes the copy. */
  remove(): Promise<void>;
}

/**
 * Copies the files of the checkout that git knows of or would add (tracked, and untracked but not ignored) into
 * a temporary folder, with `node_modules` a link to the checkout's: the copy runs as the checkout does, and the
 * package still resolves itself by name (`sqs-inbox-worker`) through the copy's package.json. For tests that run
 * a command a user runs after adding files to the project (a README's steps, a misnamed migration).
 */
export async function copyCheckout(): Promise<CheckoutCopy> {
  const root = await mkdtemp(join(tmpdir(), 'checkout-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter((file) => file && file !== 'node_modules' && existsSync(join(ROOT, file)))
    .filter((file) => statSync(join(ROOT, file)).isFile());
  for (const file of files) {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await copyFile(join(ROOT, file), join(root, file));
  }
  await symlink(realpathSync(join(ROOT, 'node_modules')), join(root, 'node_modules'), 'dir');
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}
