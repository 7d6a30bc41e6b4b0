import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { bundledSources, LOCAL_ONLY_SOURCES } from '../support/bundle-sources.ts';

// `workerEntry` with runtime "fargate": the poller's image is built from the user's entry, bundled at synth.
const POSTGRES_ENTRY = 'test/fixtures/first-handler/invoice-worker.ts';
const DYNAMODB_ENTRY = 'test/fixtures/handlers-modules/dynamo-ping.ts';
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;
const assemblies: string[] = [];
afterAll(() => {
  for (const dir of assemblies) rmSync(dir, { recursive: true, force: true });
});

/** Synthesizes a Fargate stack of `store` with `workerEntry` and returns the poller image's build context. */
function pollerImageContext(store: 'postgres' | 'dynamodb', workerEntry: string): string {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-fargate-entry-'));
  assemblies.push(outdir);
  const app = new App({ outdir });
  new SqsInboxWorkerStack(app, 'FargateEntry', {
    worker: {
      store,
      runtime: 'fargate',
      workerEntry,
      queueIdentity: DEPLOYED_QUEUES,
      alarms: 'none',
      ...(store === 'dynamodb' ? { domainKeyPrefixes: ['PING#'] } : {}),
    },
  });
  const assembly = app.synth();
  const assets = JSON.parse(readFileSync(join(assembly.directory, 'FargateEntry.assets.json'), 'utf8')) as {
    dockerImages: Record<string, { source: { directory: string } }>;
  };
  const images = Object.values(assets.dockerImages);
  expect(images).toHaveLength(1);
  return join(assembly.directory, images[0]?.source.directory ?? 'missing');
}

describe.each([
  { store: 'postgres' as const, entry: POSTGRES_ENTRY, messageType: 'InvoiceIssued' },
  { store: 'dynamodb' as const, entry: DYNAMODB_ENTRY, messageType: 'DynamoPinged' },
])(
  'Runtime fargate with workerEntry, store $store: the poller image runs your handlers',
  ({ store, entry, messageType }) => {
    const context = pollerImageContext(store, entry);

    it('builds the image from your entry bundled with the poller, and no example-domain handler', () => {
      // Act
      const sources = bundledSources(context).map((source) => resolve(context, source));
      const code = readdirSync(context, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.mjs'))
        .map((name) => readFileSync(join(context, name), 'utf8'))
        .join('\n');

      // Assess: your module and the poller are in the bundle; the example domain and bin/poller.ts are not
      // The maps name sources relative to where the bundle was built, not to the staged asset: match the path
      // inside the project.
      const entryInProject = `/${relative(process.cwd(), resolve(entry))}`;
      expect(sources.filter((source) => source.endsWith(entryInProject))).toHaveLength(1);
      expect(sources.some((source) => source.includes('/lambda/runtimes/poller/'))).toBe(true);
      expect(sources.filter((source) => /\/lambda\/domain\/|\/bin\/poller\.ts$/.test(source))).toEqual([]);
      expect(sources.filter((source) => LOCAL_ONLY_SOURCES.test(source))).toEqual([]);
      expect(code.includes(messageType), messageType).toBe(true);
      expect(code.includes('CaseStageChanged'), 'CaseStageChanged').toBe(false);
    });

    it("copies the bundle onto the shipped image's runtime stage, with nothing of the project besides", () => {
      // Act
      const dockerfile = readFileSync(join(context, 'Dockerfile'), 'utf8');
      const shipped = readFileSync('Dockerfile', 'utf8');

      // Assess: the same base, user, signal and command as the shipped image's last stage, no build stage
      const runtimeStage = (text: string) =>
        text
          .slice(text.lastIndexOf('\nFROM '))
          .split('\n')
          .filter((line) => /^(FROM|USER|STOPSIGNAL|CMD|WORKDIR) /.test(line));
      expect(runtimeStage(dockerfile)).toEqual(runtimeStage(shipped));
      expect(dockerfile.match(/^FROM /gm)).toHaveLength(1);
      expect(dockerfile).not.toMatch(/^RUN /m);
      for (const absent of ['package.json', 'node_modules', 'lambda', 'bin', 'lib']) {
        expect(() => readFileSync(join(context, absent)), absent).toThrow(/ENOENT/);
      }
    });

    it('starts on its own with node as the container does, and names a missing variable (exit 2)', () => {
      // Act: no node_modules and no configuration, as a task without its variables (your entry reads them first)
      const run = spawnSync(process.execPath, ['poller.mjs'], {
        cwd: context,
        env: { PATH: process.env.PATH ?? '', ...(store === 'dynamodb' ? { WORKER_STORE: 'dynamodb' } : {}) },
        encoding: 'utf8',
        timeout: 30_000,
      });

      // Assess
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toMatch(
        store === 'dynamodb'
          ? /^poller not started: Invalid worker configuration:\n- WORKER_STORE=dynamodb needs DYNAMODB_TABLE/
          : /^poller not started: Invalid worker configuration:\n- Set DATABASE_URL/,
      );
    });
  },
);

describe('Runtime fargate with a workerEntry without `handlers`', () => {
  it('fails synth naming the entry and the export to add', () => {
    // Act
    const act = () => pollerImageContext('postgres', 'test/fixtures/handlers-modules/no-handlers-export.ts');

    // Assess
    expect(act).toThrow(
      'workerEntry ("test/fixtures/handlers-modules/no-handlers-export.ts") has no `handlers` export (it exports pinged), which the poller of runtime "fargate" runs: export your handlers from it (`export const handlers = [myHandler];`, next to its `handler`)',
    );
  });
});
