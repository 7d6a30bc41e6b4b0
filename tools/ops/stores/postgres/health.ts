import type postgres from 'postgres';
import { collectHealth, type HealthFigures } from '../../../../lambda/health/collect-health.ts';
import { UsageError } from '../../errors.ts';
import type { HealthOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit, table } from '../../output.ts';

const ms = (value: number | null): string => (value === null ? '-' : `${(value / 1000).toFixed(1)} s`);

/**
 * `health`: the figures the scheduled health job publishes ({@link collectHealth}), read now, as a table or
 * (`--json`) one JSON document: open quarantine entries, unfinished inbox rows and the oldest in flight, the
 * outbox backlog, lock waits, deadlocks (0 on a single run: the counter needs a previous reading) and
 * long-running transactions. Read-only; never prints a payload.
 */
export async function health(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: HealthOptions,
): Promise<HealthFigures> {
  const longTransactionMs = options.longTransactionMs ?? 30_000;
  if (longTransactionMs > 3_600_000) {
    throw new UsageError(
      `--long-transaction must be at most 1h (given ${longTransactionMs / 1000}s); pass a shorter duration`,
    );
  }
  const figures = await collectHealth(deps.sql, { consumer: options.consumer, longTransactionMs });
  emit(deps.out, figures, () =>
    [
      `Health of consumer ${figures.consumer} at ${figures.at}`,
      table(
        ['figure', 'value', 'oldest'],
        [
          ['open quarantine entries', figures.quarantine.open, ms(figures.quarantine.oldestOpenAgeMs)],
          ['inbox RECEIVED', figures.inbox.byStatus.RECEIVED, ''],
          ['inbox PROCESSING', figures.inbox.byStatus.PROCESSING, ms(figures.inbox.oldestProcessingAgeMs)],
          [
            'inbox FAILED_RETRYABLE',
            figures.inbox.byStatus.FAILED_RETRYABLE,
            ms(figures.inbox.oldestRetryableAgeMs),
          ],
          ['inbox FAILED_TERMINAL', figures.inbox.byStatus.FAILED_TERMINAL, ''],
          ['in flight (claims and open inbox transactions)', '', ms(figures.inbox.oldestInFlightAgeMs)],
          ['outbox pending', figures.outbox.pending, ms(figures.outbox.oldestPendingAgeMs)],
          ['lock waits', figures.locks.waiting, ms(figures.locks.oldestWaitMs)],
          [
            'long-running transactions',
            figures.longTransactions.count,
            ms(figures.longTransactions.oldestAgeMs),
          ],
        ],
      ),
    ].join('\n'),
  );
  return figures;
}
