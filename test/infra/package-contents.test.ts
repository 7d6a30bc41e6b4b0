import { execFileSync, spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * A consumer's environment: without the suite's `--conditions=@sqs-inbox-worker/source` (vitest.config.ts), which
 * would send the installed package's own name to its TypeScript sources instead of dist/.
 */
const CONSUMER_ENV = {
  ...process.env,
  NODE_OPTIONS: (process.env.NODE_OPTIONS ?? '')
    .replace(/--conditions=@sqs-inbox-worker\/source/g, '')
    .trim(),
};

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface PackedFile {
  readonly path: string;
  readonly size: number;
}
interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly files: readonly PackedFile[];
}
type ExportTarget = string | Readonly<Record<string, string>>;
interface PackageJson {
  readonly name: string;
  readonly exports: Readonly<Record<string, ExportTarget>>;
  readonly bin: Readonly<Record<string, string>>;
  readonly dependencies: Readonly<Record<string, string>>;
  readonly peerDependencies: Readonly<Record<string, string>>;
}

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const specifierOf = (subpath: string) =>
  subpath === '.' ? PACKAGE.name : `${PACKAGE.name}/${subpath.slice(2)}`;
const SUBPATHS = Object.keys(PACKAGE.exports).filter((subpath) => subpath !== './package.json');

/** Every file an `exports` condition, a `bin` or a `types` condition names, without its leading `./`. */
function declaredTargets(): string[] {
  const targets = Object.values(PACKAGE.exports).flatMap((target) =>
    typeof target === 'string' ? [target] : Object.values(target),
  );
  return [...targets, ...Object.values(PACKAGE.bin)].map((target) => target.replace(/^\.\//, ''));
}

/**
 * The package as `npm pack` writes it: built first (`npm run build`, what `prepack` runs; timed, since `npm pack` and
 * `npm publish` pay it), then packed into a temporary folder with the scripts off (the build is fresh) and unpacked
 * there. The consumer is a fresh project beside it whose node_modules holds the unpacked package and a link to
 * each of this repository's installed packages (peers included): what `npm install <tarball>` would give, offline.
 */
describe('The npm package (npm pack)', () => {
  const work = mkdtempSync(join(tmpdir(), 'sqs-inbox-worker-pack-'));
  const consumer = join(work, 'consumer');
  const installed = join(consumer, 'node_modules', PACKAGE.name);
  let packed: PackResult;
  let buildSeconds = 0;

  beforeAll(() => {
    const started = performance.now();
    execFileSync(process.execPath, ['tools/build/build-package.mjs'], { cwd: ROOT, stdio: 'pipe' });
    buildSeconds = (performance.now() - started) / 1000;
    const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    [packed] = JSON.parse(output) as [PackResult];
    mkdirSync(join(consumer, 'node_modules'), { recursive: true });
    execFileSync('tar', ['-xzf', join(work, packed.filename), '-C', work]);
    execFileSync('mv', [join(work, 'package'), installed]);
    for (const name of readdirSync(join(ROOT, 'node_modules'))) {
      if (name === PACKAGE.name || name.startsWith('.')) continue;
      symlinkSync(join(ROOT, 'node_modules', name), join(consumer, 'node_modules', name));
    }
    writeFileSync(
      join(consumer, 'package.json'),
      `${JSON.stringify({ name: 'consumer', type: 'module' })}\n`,
    );
    process.stdout.write(
      `package: ${packed.filename} ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${packed.entryCount} files; build ${buildSeconds.toFixed(1)} s\n`,
    );
  }, 300_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('holds every file that exports, bin and types name', () => {
    // Assess
    const paths = new Set(packed.files.map((file) => file.path));
    expect(declaredTargets().filter((target) => !paths.has(target))).toEqual([]);
  });

  it('holds what a consumer needs: the compiled modules, their declarations, the sources the construct bundles, the migrations', () => {
    // Assess
    const paths = packed.files.map((file) => file.path);
    const top = new Set(
      paths.map((path) => (path.startsWith('dist/') ? path.split('/', 2).join('/') : path.split('/')[0])),
    );
    expect([...top].sort()).toEqual(
      [
        'CHANGELOG.md',
        'README.md',
        'bin',
        'dist/cli',
        'dist/lambda',
        'dist/lib',
        'lambda',
        'lib',
        'migrations',
        'package.json',
        'tools',
      ].sort(),
    );
    expect(paths).toContain('lambda/handlers/worker.ts');
    expect(paths).toContain('lambda/handlers/worker-dynamodb.ts');
    expect(paths).toContain('lib/bowser-stub.ts');
    expect(paths).toContain('migrations/00001_worker-inbox.sql');
    expect(paths).toContain('tools/build/apply-patches.mjs');
    for (const source of paths.filter((path) => /^(lambda|lib)\/.*\.ts$/.test(path))) {
      const compiled = `dist/${source.replace(/\.ts$/, '')}`;
      expect(paths, source).toContain(`${compiled}.js`);
      expect(paths, source).toContain(`${compiled}.d.ts`);
    }
  });

  it('holds no tests, fixtures, CI, docs sources, tool sources, source maps or repository settings', () => {
    // Assess
    const unwanted = packed.files
      .map((file) => file.path)
      .filter(
        (path) =>
          /^(test|\.ci|docs|events|patches|coverage|cdk\.out|\.tmp)\//.test(path) ||
          /^tools\/(?!build\/apply-patches\.mjs$)/.test(path) ||
          /^bin\/(?!sqs-worker\.js$)/.test(path) ||
          /\.(test|spec)\.ts$/.test(path) ||
          /\.map$/.test(path) ||
          /^(tsconfig.*|biome|cdk|vitest\.config|package-lock)\.(json|ts)$/.test(path) ||
          /^(Dockerfile|\.dockerignore|\.gitignore)$/.test(path) ||
          path === 'dist/cli/inputs.json',
      );
    expect(unwanted).toEqual([]);
  });

  it('keeps the construct side (aws-cdk-lib, constructs, esbuild) as peers, not dependencies', () => {
    // Assess
    expect(Object.keys(PACKAGE.peerDependencies).sort()).toEqual(['aws-cdk-lib', 'constructs', 'esbuild']);
    for (const peer of Object.keys(PACKAGE.peerDependencies)) {
      expect(PACKAGE.dependencies[peer], peer).toBeUndefined();
    }
  });

  it('loads every entry from the installed package, compiled, in Node without TypeScript', () => {
    // Prepare
    const script = `
      const out = {};
      for (const specifier of ${JSON.stringify(SUBPATHS.map(specifierOf))}) {
        const module = await import(specifier);
        out[specifier] = { file: import.meta.resolve(specifier), names: Object.keys(module).length };
      }
      process.stdout.write(JSON.stringify(out));`;

    // Act
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: consumer,
      env: CONSUMER_ENV,
      encoding: 'utf8',
    });

    // Assess
    expect(run.status, run.stderr).toBe(0);
    const loaded = JSON.parse(run.stdout) as Record<string, { file: string; names: number }>;
    for (const subpath of SUBPATHS) {
      const entry = loaded[specifierOf(subpath)];
      expect(entry?.file, subpath).toMatch(new RegExp(`/node_modules/${PACKAGE.name}/dist/.+/index\\.js$`));
      expect(entry?.names, subpath).toBeGreaterThan(0);
    }
  });

  it('runs the sqs-worker CLI from its bundle: --help', () => {
    // Act
    const run = spawnSync(process.execPath, [join(installed, PACKAGE.bin['sqs-worker'] ?? ''), '--help'], {
      env: CONSUMER_ENV,
      cwd: consumer,
      encoding: 'utf8',
    });

    // Assess
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Usage: sqs-worker');
    expect(run.stdout).toMatch(/^\s+dlq\s/m);
    expect(run.stdout).toMatch(/^\s+smoke \[options\]/m);
  });

  it("type-checks a consumer's handler file against the declarations, and refuses a wrong one", () => {
    // Prepare: the README's first handler, and a misuse the declarations must refuse (an `any` would accept it).
    const readme = readFileSync(join(ROOT, 'test/fixtures/first-handler/invoice-worker.ts'), 'utf8');
    writeFileSync(join(consumer, 'invoice-worker.ts'), readme);
    writeFileSync(
      join(consumer, 'misuse.ts'),
      "import { defineHandler } from 'sqs-inbox-worker';\nexport const wrong = defineHandler({ messageType: 42 });\n",
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const options = ['--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', '--skipLibCheck'];

    // Act
    const good = spawnSync(process.execPath, [tsc, ...options, 'invoice-worker.ts'], {
      cwd: consumer,
      encoding: 'utf8',
    });
    const wrong = spawnSync(process.execPath, [tsc, ...options, 'misuse.ts'], {
      cwd: consumer,
      encoding: 'utf8',
    });

    // Assess
    expect(good.status, good.stdout).toBe(0);
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toContain('misuse.ts');
  }, 120_000);

  it('synthesizes a DynamoDB worker and a PostgreSQL worker from the installed construct, bundling their functions from the package', () => {
    // Prepare: a CDK app of the consumer's own; bundling on (esbuild, the peer, from the consumer's node_modules).
    writeFileSync(
      join(consumer, 'app.mjs'),
      `import { App, Stack } from 'aws-cdk-lib';
      import { SqsDatabaseWorker, WorkerNetwork } from 'sqs-inbox-worker/cdk';
      const app = new App({ outdir: 'cdk.out' });
      const queueIdentity = { fifo: false, queueLogicalId: 'WorkerQueue9380F652', deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389' };
      const dynamo = new Stack(app, 'Dynamo', { env: { account: '111111111111', region: 'eu-west-1' } });
      new SqsDatabaseWorker(dynamo, 'Worker', { store: { kind: 'dynamodb' }, alarms: 'none', queueIdentity });
      const postgres = new Stack(app, 'Postgres', { env: { account: '111111111111', region: 'eu-west-1' } });
      const network = new WorkerNetwork(postgres, 'Network');
      new SqsDatabaseWorker(postgres, 'Worker', { vpc: network.vpc, alarms: 'none', queueIdentity });
      app.synth();`,
    );

    // Act
    const run = spawnSync(process.execPath, ['app.mjs'], {
      cwd: consumer,
      encoding: 'utf8',
      env: CONSUMER_ENV,
    });

    // Assess: every function's asset is a bundle (index.mjs); the migration function's carries the migrations.
    expect(run.status, run.stderr).toBe(0);
    const assets = readdirSync(join(consumer, 'cdk.out')).filter((name) => name.startsWith('asset.'));
    const bundles = assets.filter((name) =>
      readdirSync(join(consumer, 'cdk.out', name)).includes('index.mjs'),
    );
    expect(bundles.length).toBeGreaterThanOrEqual(4);
    const withMigrations = bundles.filter((name) =>
      readdirSync(join(consumer, 'cdk.out', name)).includes('migrations'),
    );
    expect(withMigrations).toHaveLength(1);
    const migrations = readdirSync(join(consumer, 'cdk.out', withMigrations[0] ?? '', 'migrations'));
    expect(migrations).toEqual(readdirSync(join(ROOT, 'migrations')).filter((name) => name.endsWith('.sql')));
    // Assess: bundled from the package's TypeScript sources (the source condition), never from its dist/ as well.
    const sources = bundles.flatMap(
      (name) =>
        (
          JSON.parse(readFileSync(join(consumer, 'cdk.out', name, 'index.mjs.map'), 'utf8')) as {
            sources: string[];
          }
        ).sources,
    );
    expect(
      sources.some((source) => source.endsWith(`${PACKAGE.name}/lambda/handlers/worker-dynamodb.ts`)),
    ).toBe(true);
    expect(sources.some((source) => source.endsWith(`${PACKAGE.name}/lambda/handlers/worker.ts`))).toBe(true);
    expect(sources.filter((source) => source.includes(`${PACKAGE.name}/dist/`))).toEqual([]);
  }, 300_000);
});
