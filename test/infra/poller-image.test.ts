import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPoller } from '../../tools/build/build-poller.ts';
import { bundledSources, LOCAL_ONLY_SOURCES } from '../support/bundle-sources.ts';
import { PATCHED_NEXT_WRITE, UNPATCHED_NEXT_WRITE } from '../support/postgres-patch.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

describe('Poller image: the Dockerfile and its build step (tools/build/build-poller.ts)', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'poller-image-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it('bundles bin/poller.ts by default and starts the file the build writes, as a non-root user on SIGTERM', () => {
    // Assess: the build stage's entry and output are what the runtime stage starts
    expect(dockerfile).toMatch(/^ARG POLLER_ENTRY=bin\/poller\.ts$/m);
    expect(dockerfile).toMatch(/^RUN npx tsx tools\/build\/build-poller\.ts "\$POLLER_ENTRY" \/out$/m);
    expect(dockerfile).toMatch(/^COPY --from=build \/out\/ \/app\/$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "poller\.mjs"\]$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^STOPSIGNAL SIGTERM$/m);
    // Two stages, both on the Node.js the bundle targets
    expect(dockerfile.match(/^FROM .*node:20-bookworm-slim/gm)).toHaveLength(2);
  });

  it('installs with the reviewed postgres.js patch applied, and bundles the patched driver', async () => {
    // Prepare
    const out = join(outdir, 'patched');
    await buildPoller(join(ROOT, 'bin/poller.ts'), out);
    const lines = dockerfile.split('\n');
    const install = lines.findIndex((line) => line.startsWith('RUN npm ci '));
    const patches = lines.indexOf('COPY patches ./patches');

    // Assess: the build stage installs without scripts (so without `postinstall`), then applies patches/ itself
    // and fails on a patch that does not apply; the build context keeps patches/
    expect(patches).toBeGreaterThan(-1);
    expect(patches).toBeLessThan(install);
    expect(lines[install]).toMatch(/^RUN npm ci --ignore-scripts .*&& npx patch-package --error-on-fail$/);
    const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
    expect(dockerignore.filter((line) => /^!?\**\/?patches/.test(line))).toEqual([]);
    // The bundle the image runs holds the patched driver (esbuild reads node_modules as patched here)
    const bundle = readFileSync(join(out, 'poller.mjs'), 'utf8');
    // (booleans: a failed match would print the whole minified bundle)
    expect(PATCHED_NEXT_WRITE.test(bundle), 'nextWrite as patched').toBe(true);
    expect(UNPATCHED_NEXT_WRITE.test(bundle), 'nextWrite as released').toBe(false);
  });

  it('bundles the real bin/poller.ts, whose bundle starts alone and names a missing variable (exit 2)', async () => {
    // Prepare
    const out = join(outdir, 'real');
    await buildPoller(join(ROOT, 'bin/poller.ts'), out);

    // Act: the bundle without node_modules and without its configuration
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['poller.mjs'], {
        cwd: out,
        env: { PATH: process.env.PATH ?? '' },
      });
      let errors = '';
      child.stderr.on('data', (chunk) => {
        errors += String(chunk);
      });
      child.on('exit', (exitCode) => resolve({ code: exitCode, stderr: errors }));
    });

    // Assess
    expect(code).toBe(2);
    expect(stderr).toMatch(/^poller not started: Invalid poller configuration:/);
    expect(stderr).toContain('WORKER_QUEUE_URL is required by the poller');
  });

  it('puts no local-only code in the image: neither the local IAM layer nor its AGPL-3.0 evaluator', async () => {
    // Prepare
    const out = join(outdir, 'sources');
    await buildPoller(join(ROOT, 'bin/poller.ts'), out);

    // Act
    const sources = bundledSources(out);

    // Assess
    expect(sources.some((source) => source.includes('lambda/runtimes/poller/'))).toBe(true);
    expect(sources.filter((source) => LOCAL_ONLY_SOURCES.test(source))).toEqual([]);
  });

  it('produces a bundle that runs on its own with Node.js, reads the worker configuration and ends on SIGTERM', async () => {
    // Prepare
    await buildPoller(join(ROOT, 'test/fixtures/poller-entry/entry.ts'), outdir);
    expect(existsSync(join(outdir, 'poller.mjs'))).toBe(true);

    // Act: no node_modules next to it (the runtime stage has none), only the container's environment
    const child = spawn(process.execPath, ['poller.mjs'], {
      cwd: outdir,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: 'postgres://worker:secret@127.0.0.1:5432/worker',
        WORKER_CONSUMER: 'image-test',
        DB_POOL_SIZE: '4',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk) => {
        stdout += String(chunk);
        if (stdout.includes('\n')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await ready;
    child.kill('SIGTERM');
    const code = await exited;

    // Assess
    expect({ code, stdout, stderr }).toEqual({
      code: 0,
      stdout: 'ready image-test 4\nstopped\n',
      stderr: '',
    });
  });
});
