import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { BENCH_CONSUMER } from '../../tools/bench/bench-lanes.ts';
import { caseIds, deadlineRecords } from '../../tools/bench/bench-messages.ts';
import { rawBaseline } from '../../tools/bench/raw-baseline.ts';
import { lambdaContext } from '../../tools/local/lambda-context.ts';
import { createTestDatabase } from '../support/database.ts';

const db = await createTestDatabase();

/** A client like a lane's (pool 1, `prepare: false`, the worker's driver options) that records each statement's text, whitespace collapsed. */
function recordingClient(statements: string[]): postgres.Sql {
  return db.client({
    prepare: false,
    max: 1,
    fetch_types: false, // its catalog query on connect is not the path's SQL
    debug: (_connection, query) => statements.push(query.replace(/\s+/g, ' ').trim()),
  });
}

describe('Function: rawBaseline (the bench baseline)', () => {
  it('sends the statements the worker sends for a CaseDeadlineCalculationRequested message, text for text', async () => {
    // Prepare: one case per side, as the bench creates them.
    const [baselineRecord] = deadlineRecords('sql-baseline', 1);
    const [workerRecord] = deadlineRecords('sql-worker', 1);
    const ids = [...caseIds('sql-baseline', 1), ...caseIds('sql-worker', 1)];
    await db.sql`insert into cases (case_id, stage, version) select id, 'INVESTIGATION', 1 from unnest(${ids}::text[]) as id`;
    const baselineStatements: string[] = [];
    const workerStatements: string[] = [];
    const worker = createWorker({
      consumer: BENCH_CONSUMER,
      handlers: exampleHandlers,
      sql: recordingClient(workerStatements),
      logger: new Logger({ logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'Bench' }),
    });

    // Act
    await rawBaseline(recordingClient(baselineStatements), BENCH_CONSUMER, [baselineRecord as never]);
    const response = await worker(
      { Records: [workerRecord as never] },
      lambdaContext({ functionName: 'bench-baseline-test', timeoutMs: 30_000 }),
    );

    // Assess: both applied the effect, with the same three statements (claim that completes, deadline, commit; on the
    // worker's driver options BEGIN is no statement of its own: it goes out with the claim).
    expect(response).toEqual({ batchItemFailures: [] });
    expect(
      await db.sql`select case_id from case_deadlines where case_id = any(${ids}::text[]) order by case_id`,
    ).toHaveLength(2);
    expect(workerStatements).toHaveLength(3);
    expect(baselineStatements).toEqual(workerStatements);
  });
});
