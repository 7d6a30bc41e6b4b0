import {
  collectDynamoHealth,
  type DynamoHealthFigures,
} from '../../../../lambda/stores/dynamodb/collect-dynamo-health.ts';
import type { HealthOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit, table } from '../../output.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

const ms = (value: number | null): string => (value === null ? '-' : `${(value / 1000).toFixed(1)} s`);

/**
 * `health --store dynamodb`: the figures the DynamoDB health job publishes ({@link collectDynamoHealth}, one bounded
 * Scan), read now, as a table or (`--json`) one JSON document: open quarantine items, unfinished inbox items and the
 * oldest in flight, leases past their expiry, the outbox backlog. DynamoDB has no locks or long transactions (no
 * `--long-transaction`). Read-only; never prints a payload.
 */
export async function dynamoHealth(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput },
  options: HealthOptions,
): Promise<DynamoHealthFigures> {
  const figures = await collectDynamoHealth(deps.dynamo, { consumer: options.consumer });
  emit(deps.out, figures, () =>
    [
      `Health of consumer ${figures.consumer} at ${figures.at} (table ${deps.dynamo.tableName}${figures.truncated ? `, first ${figures.scanned} items only` : ''})`,
      table(
        ['figure', 'value', 'oldest'],
        [
          ['open quarantine items', figures.quarantine.open, ms(figures.quarantine.oldestOpenAgeMs)],
          ['inbox PROCESSING', figures.inbox.byStatus.PROCESSING, ms(figures.inbox.oldestProcessingAgeMs)],
          ['  of which leases expired', figures.leasesExpired, ''],
          [
            'inbox FAILED_RETRYABLE',
            figures.inbox.byStatus.FAILED_RETRYABLE,
            ms(figures.inbox.oldestRetryableAgeMs),
          ],
          ['inbox FAILED_TERMINAL', figures.inbox.byStatus.FAILED_TERMINAL, ''],
          ['outbox pending', figures.outbox.pending, ms(figures.outbox.oldestPendingAgeMs)],
        ],
      ),
    ].join('\n'),
  );
  return figures;
}
