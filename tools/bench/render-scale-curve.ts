import type { QueueRig } from './queue-rig.ts';
import type { QueueRunFigures } from './queue-run.ts';
import { activeMsPerMessage } from './queue-window.ts';
import type { ScalePoint } from './scale-curve.ts';
import { formatMs } from './statistics.ts';

/**
 * A run's database figures: round trips per message and per second, backends running a statement and inside a
 * transaction, and the backends' running time per message.
 */
function databaseColumns(figures: QueueRunFigures): string {
  return `${(figures.dbRoundTrips / figures.plan.messages).toFixed(2).padStart(6)} ${(figures.dbRoundTrips / figures.seconds).toFixed(0).padStart(6)} ${figures.activeBackends.toFixed(2).padStart(6)} ${figures.idleInTransaction.toFixed(2).padStart(6)} ${formatMs(activeMsPerMessage(figures)).padStart(8)}`;
}

/**
 * The scale curve: per commit mode, one line per records in flight with the poller's msgs/s, its growth over the
 * first point (msgs/s ÷ (records × the 1-record figure): 1.00 is linear), record times, its database figures and
 * event loop utilization, then the minimal transaction without a queue at the same records in flight (the
 * database's own figure) and the poller's share of it.
 */
export function renderScaleCurve(
  points: readonly ScalePoint[],
  context: { readonly rig: QueueRig; readonly rounds: number; readonly messagesPerRecord: number },
): string {
  const { rig } = context;
  const lines = [
    `Scale curve (the poller, records in flight = POLLER_CONCURRENCY, batches of min(10, free slots)): SQS and PostgreSQL each behind a ${rig.delayMs} ms/direction proxy ` +
      `(a database round trip measured ${formatMs(rig.dbRoundTripMs)}); ${context.messagesPerRecord} measured messages per record in flight per run (at least 50), median of ${context.rounds} interleaved rounds. ` +
      'growth = msgs/s ÷ (records × the 1-record msgs/s); DB: round trips per message and per second, mean backends active (running a statement) and idle in a transaction ' +
      '(pg_stat_activity every 20 ms) and their running time per message (act/msg); ELU = this process\'s event loop utilization; "minimal, no queue" = the hand-written transaction at the same records in flight, no SQS: the database\'s own figure.',
  ];
  for (const commitMode of ['per-message', 'per-batch'] as const) {
    const of = points.filter((point) => point.commitMode === commitMode);
    const first = of[0];
    if (!first) continue;
    lines.push(
      `  ${commitMode}: ${'records'.padStart(7)} ${'msgs/s'.padStart(7)} ${'growth'.padStart(6)} ${'p50'.padStart(8)} ${'p99'.padStart(8)}  DB: ${'RT/msg'.padStart(6)} ${'RT/s'.padStart(6)} ${'active'.padStart(6)} ${'in tx'.padStart(6)} ${'act/msg'.padStart(8)} ${'ELU'.padStart(5)} | minimal, no queue: ${'msgs/s'.padStart(7)} ${'RT/msg'.padStart(6)} ${'RT/s'.padStart(6)} ${'active'.padStart(6)} ${'in tx'.padStart(6)} ${'act/msg'.padStart(8)}  poller ÷ minimal`,
    );
    for (const point of of) {
      const growth = point.poller.messagesPerSecond / (point.concurrency * first.poller.messagesPerSecond);
      lines.push(
        `  ${' '.repeat(commitMode.length)}  ${String(point.concurrency).padStart(7)} ${point.poller.messagesPerSecond.toFixed(0).padStart(7)} ${growth.toFixed(2).padStart(6)} ${formatMs(point.poller.p50Ms).padStart(8)} ${formatMs(point.poller.p99Ms).padStart(8)}      ${databaseColumns(point.poller)} ${point.poller.eventLoopUtilization.toFixed(2).padStart(5)} |                    ${point.minimal.messagesPerSecond.toFixed(0).padStart(7)} ${databaseColumns(point.minimal)}  ${(point.poller.messagesPerSecond / point.minimal.messagesPerSecond).toFixed(2).padStart(15)}`,
      );
    }
  }
  return lines.join('\n');
}
