import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { runEntry } from '../support/run-entry.ts';
import { envelopeFactory } from '../support/sqs-event.ts';

const db = await createTestDatabase();
const ROOT = '1-5759e988-bd862e3fe1be46a994272793';

/** Runs the deployable worker entry in a fresh process on one message; its report and log lines. */
async function invokeWorker(env: Record<string, string>) {
  const envelope = envelopeFactory({ idempotencyKey: `tracing-off:${randomUUID()}` });
  const run = await runEntry(
    'test/fixtures/tracing/invoke-worker.ts',
    [],
    {
      DATABASE_URL: db.url,
      WORKER_CONSUMER: 'tracing-off',
      AWS_REGION: 'us-east-1',
      TRACING_TEST_ENVELOPE: JSON.stringify(envelope),
      TRACING_TEST_HEADER: `Root=${ROOT};Parent=53995c3f42cd8ad8;Sampled=1`,
      ...env,
    },
    60_000,
  );
  const lines = `${run.stdout}\n${run.stderr}`
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const report = lines.find((line) => 'xraySdkModules' in line) as
    | { response: unknown; xraySdkModules: number }
    | undefined;
  return { run, lines, report, envelope };
}

describe('Tracing: off by default', () => {
  it('never loads the tracer or the X-Ray SDK when POWERTOOLS_TRACE_ENABLED is unset, and still logs the trace id', async () => {
    // Act
    const { run, lines, report, envelope } = await invokeWorker({});

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(report).toEqual({ response: { batchItemFailures: [] }, xraySdkModules: 0 });
    expect(lines).toContainEqual(
      expect.objectContaining({
        message: 'worker_message_completed',
        idempotencyKey: envelope.idempotencyKey,
        traceId: ROOT,
      }),
    );
  });

  it('loads them when POWERTOOLS_TRACE_ENABLED=true (the check above can see them)', async () => {
    // Act
    const { run, report } = await invokeWorker({
      POWERTOOLS_TRACE_ENABLED: 'true',
      POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
    });

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(report?.response).toEqual({ batchItemFailures: [] });
    expect(report?.xraySdkModules).toBeGreaterThan(0);
  });
});
