import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { beforeAll, describe, expect, it } from 'vitest';
import { SqsDatabaseWorker } from '../../lib/sqs-database-worker.ts';

// Bundles the three functions for real with the local esbuild (no Docker), once for the file.
describe('Class: SqsDatabaseWorker (real esbuild bundling)', () => {
  let assembly: string;
  let worker: SqsDatabaseWorker;
  beforeAll(() => {
    assembly = mkdtempSync(join(tmpdir(), 'cdk-bundle-'));
    const app = new App({ outdir: assembly });
    const stack = new Stack(app, 'Bundled');
    worker = new SqsDatabaseWorker(stack, 'Worker', { vpc: new ec2.Vpc(stack, 'Vpc', { natGateways: 0 }) });
    app.synth();
  });

  const assetOf = (fn: { node: { findChild(id: string): unknown } }): string => {
    const code = fn.node.findChild('Code') as { assetPath: string };
    return join(assembly, code.assetPath);
  };

  it('bundles the worker into one minified ESM file with a source map', () => {
    // Act
    const dir = assetOf(worker.workerFunction);
    const files = readdirSync(dir).sort();
    const bundleBytes = statSync(join(dir, 'index.mjs')).size;
    const mapBytes = statSync(join(dir, 'index.mjs.map')).size;
    console.log(
      `worker bundle: index.mjs ${(bundleBytes / 1024).toFixed(1)} KiB, source map ${(mapBytes / 1024).toFixed(1)} KiB`,
    );

    // Assess: one file, minified (few lines), SDK and postgres.js bundled in, well under Lambda's 50 MB zip limit
    expect(files).toEqual(['index.mjs', 'index.mjs.map']);
    expect(bundleBytes).toBeGreaterThan(100 * 1024);
    expect(bundleBytes).toBeLessThan(10 * 1024 * 1024);
  });

  it('copies the migrations next to the migration function code', () => {
    const dir = assetOf(worker.migrationFunction);
    const migrations = readdirSync(join(dir, 'migrations')).sort();
    const source = readdirSync(join(import.meta.dirname, '../../migrations'))
      .filter((file) => file.endsWith('.sql'))
      .sort();

    expect(migrations).toEqual(source);
    expect(migrations[0]).toBe('00001_worker-inbox.sql');
  });
});
