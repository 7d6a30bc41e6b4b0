import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';

// The stage setting `workerEntry`, as bin/app.ts reads it from cdk.json; paths are relative to the folder cdk runs
// in (the project root, where vitest runs too).
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: { stages: Record<string, Record<string, unknown>> };
};
const FIRST_HANDLER = 'test/fixtures/first-handler/invoice-worker.ts';
const assemblies: string[] = [];
afterAll(() => {
  for (const dir of assemblies) rmSync(dir, { recursive: true, force: true });
});

function synthDev(settings: Record<string, unknown>, bundling: boolean) {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-entry-'));
  assemblies.push(outdir);
  const app = new App({ outdir, context: bundling ? {} : { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-dev', {
    worker: stageSettings('dev', { ...cdkJson.context.stages.dev, ...settings }),
  });
  return { outdir, stack };
}

describe('Stage setting: workerEntry', () => {
  it('bundles the entry file it names as the worker function, instead of the example domain', () => {
    // Prepare
    const { outdir, stack } = synthDev({ workerEntry: FIRST_HANDLER }, true);

    // Act
    const code = stack.worker.workerFunction?.node.findChild('Code') as unknown as { assetPath: string };
    const dir = join(outdir, code.assetPath);
    const bundle = [
      readFileSync(join(dir, 'index.mjs'), 'utf8'),
      ...readdirSync(join(dir, 'chunks'))
        .filter((name) => name.endsWith('.mjs'))
        .map((name) => readFileSync(join(dir, 'chunks', name), 'utf8')),
    ].join('\n');

    // Assess
    expect(bundle).toContain('InvoiceIssued');
    expect(bundle).not.toContain('CaseStageChanged');
  });

  it('fails synth naming the value, where it looked and the fix, when the file does not exist', () => {
    // Act
    const act = () => synthDev({ workerEntry: 'lambda/handlers/invoice-wroker.ts' }, false);

    // Assess
    expect(act).toThrow(
      /workerEntry \("lambda\/handlers\/invoice-wroker\.ts"\) is not a file \(looked for \/.*lambda\/handlers\/invoice-wroker\.ts\); give the path of your entry file/,
    );
  });

  it('must be a string', () => {
    // Act
    const act = () => stageSettings('dev', { workerEntry: 42 });

    // Assess
    expect(act).toThrow('stages.dev.workerEntry must be a string (given 42)');
  });
});
