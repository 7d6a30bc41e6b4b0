import Table from 'cli-table3';
import type { RetentionPurgeResult } from './retention-purge.ts';
import { formatRatio } from './statistics.ts';

/** Bytes in MiB with one decimal: `12.3 MiB`. */
const formatMiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The retention purge line: the purge's duration and rate, the worker's msgs/s alone and during the purge, and
 * `worker_inbox`'s size at each step, with what a plain DELETE and VACUUM do to it.
 */
export function renderRetentionPurge(result: RetentionPurgeResult): string {
  const table = new Table({
    style: { head: [], border: [] },
    head: ['worker_inbox', 'total', 'heap', 'indexes', 'rows'],
    colAligns: ['left', 'right', 'right', 'right', 'right'],
  });
  for (const size of result.sizes) {
    table.push([
      size.label,
      formatMiB(size.totalBytes),
      formatMiB(size.heapBytes),
      formatMiB(size.indexBytes),
      size.rows.toLocaleString('en-US'),
    ]);
  }
  const seconds = result.purgeMs / 1000;
  const { autovacuum } = result;
  return [
    `Retention purge (purgeRetention: batches of ${result.batchSize}, duty cycle ${result.dutyCycle}) of ` +
      `${result.rows.toLocaleString('en-US')} COMPLETED inbox rows 30 days old, in runs of a 0.5 s budget alternating ` +
      'with 0.5 s worker-only segments; the worker is one per-message environment (pool 1) on the same database:',
    `  purge: ${result.removed.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s ` +
      `(${Math.round(result.removed / seconds).toLocaleString('en-US')} rows/s, ${result.batches} batches, ${result.runs} runs)`,
    `  worker: ${result.aloneMessagesPerSecond.toFixed(0)} msgs/s alone, ${result.purgingMessagesPerSecond.toFixed(0)} msgs/s ` +
      `during the purge (${formatRatio(result.purgingMessagesPerSecond, result.aloneMessagesPerSecond)}; ` +
      `${result.workerMessages} messages)`,
    table.toString(),
    '  A plain DELETE frees nothing: dead rows keep their pages until VACUUM makes the space reusable, heap space at ' +
      'once, emptied B-tree pages by a later VACUUM (after a transaction id has been handed out in between). VACUUM ' +
      'returns only empty pages at the end of the heap to the OS, never index pages; only VACUUM FULL (a rewrite under ' +
      'an exclusive lock) shrinks the files.',
    `  Autovacuum ${autovacuum.enabled ? 'on' : 'OFF'} (naptime ${autovacuum.naptime}): it vacuums worker_inbox once ` +
      `${autovacuum.threshold} + ${autovacuum.scaleFactor * 100} % of its rows are dead; it ran ` +
      `${result.autovacuumsDuringPurge} time(s) between seeding and the bench's first VACUUM.`,
  ].join('\n');
}
