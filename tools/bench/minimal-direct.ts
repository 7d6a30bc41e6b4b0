import { randomBytes } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import postgres from 'postgres';
import { caseIds, chunk, deadlineRecords } from './bench-messages.ts';
import { minimalBaseline } from './minimal-baseline.ts';
import { minimalBatchBaseline } from './minimal-batch-baseline.ts';
import type { QueueRig } from './queue-rig.ts';
import type { QueueRunFigures, QueueRunPlan } from './queue-run.ts';
import { openWindow } from './queue-window.ts';
import { percentile } from './statistics.ts';

/**
 * The database's own figure at a point of the scale curve: the hand-written minimal inbox transaction with no queue
 * at all, through the same delaying proxy, at the poller's records in flight. Per message, `concurrency`
 * transactions at once on a pool of as many (`minimal-baseline.ts`); per batch, one transaction of `concurrency`
 * records at a time (`minimal-batch-baseline.ts`), as the poller runs a batch of its free slots. What the poller
 * loses to it is the queue's share (receive, delete, the worker); where both stop growing, the database (with the
 * network in front of it) is the limit.
 */
export async function runMinimalDirect(rig: QueueRig, plan: QueueRunPlan): Promise<QueueRunFigures> {
  const run = randomBytes(3).toString('hex');
  const prefix = `bench-direct-${run}`;
  const consumer = `bench-direct-${run}`;
  const total = plan.warmupMessages + plan.messages;
  await rig.admin`
    insert into cases (case_id, stage, version)
    select case_id, 'INVESTIGATION', 1 from unnest(${rig.admin.array(caseIds(prefix, total))}::text[]) as case_id
  `;
  await rig.admin`vacuum analyze worker_inbox, cases, case_deadlines`;
  const records = deadlineRecords(prefix, total);
  const perBatch = plan.commitMode === 'per-batch';
  const sql = postgres(rig.dbUrl, {
    max: perBatch ? 1 : plan.concurrency,
    prepare: false,
    onnotice: () => {},
  });
  const units = perBatch ? chunk(records, plan.concurrency) : records.map((record) => [record]);
  const lanes = perBatch ? 1 : plan.concurrency;
  const transact = (batch: SQSRecord[]) =>
    perBatch ? minimalBatchBaseline(sql, consumer, batch) : minimalBaseline(sql, consumer, batch);
  const drain = async (from: number, to: number, latencies: number[]) => {
    let next = from;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        for (let index = next++; index < to; index = next++) {
          latencies.push(...(await transact(units[index] as SQSRecord[])));
        }
      }),
    );
  };
  try {
    const warmupUnits = Math.ceil(plan.warmupMessages / (perBatch ? plan.concurrency : 1));
    await drain(0, warmupUnits, []);
    const window = await openWindow(rig);
    const latencies: number[] = [];
    await drain(warmupUnits, units.length, latencies);
    const figures = await window.close();
    const measured =
      records.length - Math.min(records.length, warmupUnits * (perBatch ? plan.concurrency : 1));
    return {
      ...figures,
      side: 'minimal, no queue',
      plan: { ...plan, messages: measured },
      messagesPerSecond: measured / figures.seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}
