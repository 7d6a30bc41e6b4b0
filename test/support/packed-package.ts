import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Asynchronous, never `execFileSync`: a build takes tens of seconds, and a blocked event loop lets the test file's
 * other timers (a database connection's connect timeout) fire late and fail.
 */
const run = promisify(execFile);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where packed tarballs are kept between test files of one run (git-ignored), and the lock around building one. */
const PACKS = join(ROOT, '.tmp', 'pack');
const LOCK = join(ROOT, '.tmp', 'pack.lock');

/** One entry of `npm pack --json`. */
export interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly files: readonly { readonly path: string; readonly size: number }[];
}

/** A fresh project that installed the packed package: what {@link installPackedPackage} returns. */
export interface InstalledProject {
  /** The project's folder (its package.json: `"type": "module"`). */
  readonly consumer: string;
  /** `node_modules/sqs-inbox-worker` of the project: the unpacked tarball. */
  readonly installed: string;
  readonly packed: PackResult;
  /** Seconds `npm run build` took, or undefined when another test file of this run built the same sources. */
  readonly buildSeconds: number | undefined;
  /** Removes the project. */
  remove(): void;
}

/**
 * A consumer's environment: without the suite's `--conditions=@sqs-inbox-worker/source` (vitest.config.ts), which
 * would send the installed package's own name to its TypeScript sources instead of dist/.
 */
export const CONSUMER_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  NODE_OPTIONS: (process.env.NODE_OPTIONS ?? '')
    .replace(/--conditions=@sqs-inbox-worker\/source/g, '')
    .trim(),
};

/** Every file of the folders and files `npm pack` reads (package.json `files`, and the build's inputs). */
function sourcesHash(): string {
  const hash = createHash('sha256');
  const roots = [
    'package.json',
    'tsconfig.build.json',
    'tsconfig.json',
    'cdk.json',
    'CHANGELOG.md',
    'README.md',
  ];
  const folders = ['bin', 'lambda', 'lib', 'migrations', 'tools'];
  const files = [
    ...roots,
    ...folders.flatMap((folder) =>
      readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' }).map((name) =>
        join(folder, name),
      ),
    ),
  ]
    .filter((file) => statSync(join(ROOT, file)).isFile())
    .sort();
  for (const file of files) hash.update(file).update(readFileSync(join(ROOT, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Runs `work` holding the pack lock (a folder: mkdir is atomic), so two test files never build dist/ at once. */
async function withPackLock<T>(work: () => Promise<T>): Promise<T> {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Held: by another file of this run, or left by a killed run (older than a build can take).
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 600_000) rmSync(LOCK, { recursive: true, force: true });
      await sleep(200);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * The package as `npm pack` writes it, for the sources as they are: built (`npm run build`, what `prepack` runs;
 * timed, since `npm pack` and `npm publish` pay it) and packed once per state of the sources, under a lock, and
 * kept in `.tmp/pack/` for the other test files of the run.
 */
async function packedTarball(): Promise<{ tarball: string; packed: PackResult; buildSeconds?: number }> {
  return withPackLock(async () => {
    const folder = join(PACKS, sourcesHash());
    const manifest = join(folder, 'pack.json');
    if (existsSync(manifest)) {
      const packed = JSON.parse(readFileSync(manifest, 'utf8')) as PackResult;
      return { tarball: join(folder, packed.filename), packed };
    }
    rmSync(PACKS, { recursive: true, force: true });
    const started = performance.now();
    await run(process.execPath, ['tools/build/build-package.mjs'], { cwd: ROOT });
    const buildSeconds = (performance.now() - started) / 1000;
    const partial = `${folder}.${process.pid}`;
    mkdirSync(partial, { recursive: true });
    const { stdout: output } = await run(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', partial],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
    );
    const [packed] = JSON.parse(output) as [PackResult];
    writeFileSync(join(partial, 'pack.json'), JSON.stringify(packed));
    renameSync(partial, folder);
    return { tarball: join(folder, packed.filename), packed, buildSeconds };
  });
}

/**
 * A fresh project in a temporary folder that installed the packed package: its node_modules holds the unpacked
 * tarball, `.bin/sqs-worker` (the package's `bin`, as npm links it) and a link to each of this repository's
 * installed packages (the peers and the local tools included): what `npm install <tarball>` and the documented
 * dev dependencies give, offline.
 */
export async function installPackedPackage(): Promise<InstalledProject> {
  const { tarball, packed, buildSeconds } = await packedTarball();
  const work = mkdtempSync(join(tmpdir(), 'sqs-inbox-worker-pack-'));
  const consumer = join(work, 'consumer');
  const installed = join(consumer, 'node_modules', 'sqs-inbox-worker');
  mkdirSync(join(consumer, 'node_modules', '.bin'), { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', work]);
  renameSync(join(work, 'package'), installed);
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name === 'sqs-inbox-worker' || name.startsWith('.')) continue;
    symlinkSync(join(ROOT, 'node_modules', name), join(consumer, 'node_modules', name));
  }
  for (const name of readdirSync(join(ROOT, 'node_modules', '.bin'))) {
    symlinkSync(join(ROOT, 'node_modules', '.bin', name), join(consumer, 'node_modules', '.bin', name));
  }
  symlinkSync('../sqs-inbox-worker/bin/sqs-worker.js', join(consumer, 'node_modules', '.bin', 'sqs-worker'));
  writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', type: 'module' })}\n`);
  return {
    consumer,
    installed,
    packed,
    buildSeconds,
    remove: () => rmSync(work, { recursive: true, force: true }),
  };
}
