import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_SIZE } from '../../tools/bench/bench-config.ts';
import { type BenchMode, benchLane } from '../../tools/bench/bench-lanes.ts';
import { caseIds, chunk, deadlineRecords } from '../../tools/bench/bench-messages.ts';
import { pinningReasons } from '../../tools/bench/pinning-conditions.ts';
import type { RoundTripProxy } from '../../tools/bench/round-trip-proxy.ts';
import { countingProxy } from '../support/counting-proxy.ts';
import { createTestDatabase } from '../support/database.ts';

const db = await createTestDatabase();
let proxy: RoundTripProxy;
let proxiedUrl: string;
let runs = 0;

beforeAll(async () => {
  ({ proxy, url: proxiedUrl } = await countingProxy(db.url));
});
afterAll(async () => {
  await proxy.close();
});

/**
 * Runs one warm-up batch and two counted batches of `mode` through the counting proxy, each message a fresh
 * `CaseDeadlineCalculationRequested` (the bench's message), and returns round trips and statements per counted
 * message with every distinct statement the lane sent (warm-up included: a prepared statement is parsed once).
 */
async function countMode(mode: BenchMode) {
  runs += 1;
  const prefix = `rt-${mode}-${runs}`;
  await db.sql`
    insert into cases (case_id, stage, version)
    select id, 'INVESTIGATION', 1 from unnest(${caseIds(prefix, 3 * BATCH_SIZE)}::text[]) as id
  `;
  const [warmup, ...counted] = chunk(deadlineRecords(prefix, 3 * BATCH_SIZE), BATCH_SIZE);
  await proxy.statements();
  const lane = benchLane(mode, proxiedUrl);
  try {
    await lane.process(warmup ?? []);
    const before = await proxy.counts();
    for (const batch of counted) await lane.process(batch);
    const after = await proxy.counts();
    const messages = counted.flat().length;
    const [{ completed } = { completed: 0 }] = await db.sql<{ completed: number }[]>`
      select count(*)::int as completed from worker_inbox
      where status = 'COMPLETED' and idempotency_key like ${`case:${prefix}-%`}
    `;
    return {
      roundTrips: (after.roundTrips - before.roundTrips) / messages,
      statements: (after.statements - before.statements) / messages,
      seen: await proxy.statements(),
      completed,
    };
  } finally {
    await lane.close();
  }
}

describe('Round trips per message through the counting proxy (batches of 10, fresh messages)', () => {
  it.each([
    // BEGIN, claim (inserted COMPLETED) ×2, domain ×2, COMMIT.
    ['minimal', 6, 4],
    // BEGIN, batch claim ×2, 10 × domain ×2, COMMIT: 24 per 10.
    ['minimal-batch', 2.4, 1.3],
    // The worker's SQL by hand, and the worker, on the worker's driver options (ROUND_TRIP_OPTIONS): BEGIN sent with
    // the claim that completes a new key, the domain statement, COMMIT, each one round trip (their parameters typed).
    ['baseline', 3, 4],
    ['per-message', 3, 4],
    // BEGIN with the batch claim that completes the new keys, 10 × domain, COMMIT: 12 per 10.
    ['per-batch', 1.2, 1.3],
    // Named prepared statements: parsed once; only BEGIN, sent with the first of them, is parsed every time.
    ['per-message-prepared', 3, 1],
    ['per-batch-prepared', 1.2, 0.1],
  ] as const)('%s: %d round trips and %d statements per message', async (mode, roundTrips, statements) => {
    // Act
    const counted = await countMode(mode);

    // Assess: every message applied, and the counts (deterministic: they follow from the protocol).
    expect(counted.completed).toBe(3 * BATCH_SIZE);
    expect(counted.roundTrips).toBeCloseTo(roundTrips, 5);
    expect(counted.statements).toBeCloseTo(statements, 5);
  });

  it.each(['per-message', 'per-batch'] as const)(
    '%s with prepare: false sends no statement that pins an RDS Proxy connection',
    async (mode) => {
      // Act
      const { seen } = await countMode(mode);

      // Assess: the claim was among them, and none meets a pinning condition.
      expect(seen.some((statement) => statement.text.includes('insert into worker_inbox'))).toBe(true);
      expect(
        seen
          .map((statement) => ({ text: statement.text, reasons: pinningReasons(statement) }))
          .filter((s) => s.reasons.length > 0),
      ).toEqual([]);
    },
  );

  it('per-message-prepared names its statements, which pins RDS Proxy (so DB_PREPARE is for direct connections)', async () => {
    // Act
    const { seen } = await countMode('per-message-prepared');

    // Assess: every statement but BEGIN (unnamed, sent with the transaction's first statement) is a named one.
    const named = seen.filter((statement) => pinningReasons(statement).includes('named prepared statement'));
    expect(named.some((statement) => statement.text.includes('insert into worker_inbox'))).toBe(true);
    expect(seen.filter((statement) => !named.includes(statement)).map((statement) => statement.text)).toEqual(
      ['begin '],
    );
  });
});
