import { DYNAMODB_MAX_RECORD_CONCURRENCY } from '../lambda/config.ts';
import { isToken, type SettingChecks } from './setting-checks.ts';
import type { WorkerStore } from './stores/worker-store.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The records a worker runs at once, and whether a batch commits in one transaction. */
export interface RecordConcurrency {
  readonly recordConcurrency: number;
  /** PostgreSQL with `commitMode: 'per-batch'`. */
  readonly perBatch: boolean;
}

/**
 * The records in flight per worker. Per message on PostgreSQL each holds a connection (≤ `dbPoolSize`). Per
 * batch, a batch's records run one after another in its one transaction, on one connection
 * (`WORKER_RECORD_CONCURRENCY` 1): a function runs one record at a time, a Fargate task up to `dbPoolSize` whole
 * batches at once (`recordConcurrency` is then its `POLLER_CONCURRENCY`, the records in flight). On DynamoDB the
 * worker runs at most 10 records of a batch at once, whatever the write budget allows.
 *
 * @internal
 */
export function resolveRecordConcurrency(
  props: Omit<WorkerSettings, 'vpc'>,
  values: { store: WorkerStore; fargate: boolean; dbPoolSize: number; batchSize: number },
  range: SettingChecks['range'],
  problems: string[],
): RecordConcurrency {
  const { store, fargate, dbPoolSize, batchSize } = values;
  const perBatch = store === 'postgres' && props.commitMode === 'per-batch';
  const recordLimit = perBatch ? (fargate ? dbPoolSize * batchSize : 1) : dbPoolSize;
  const recordConcurrency = props.recordConcurrency ?? (perBatch ? recordLimit : dbPoolSize);
  const resolved = !isToken(recordConcurrency) && !isToken(dbPoolSize) && !isToken(batchSize);
  if (store === 'postgres' && resolved && recordConcurrency > recordLimit) {
    problems.push(
      !perBatch
        ? `recordConcurrency (${recordConcurrency}) must not exceed dbPoolSize (${dbPoolSize}): each record in flight holds one connection; raise dbPoolSize or lower recordConcurrency`
        : fargate
          ? `recordConcurrency (${recordConcurrency}) must not exceed dbPoolSize × batchSize (${dbPoolSize} × ${batchSize} = ${recordLimit}) with commitMode per-batch: each batch in flight holds one connection; raise dbPoolSize or lower recordConcurrency`
          : `recordConcurrency (${recordConcurrency}) must be 1 with commitMode per-batch: an invocation's batch runs one record after another in its one transaction; remove recordConcurrency`,
    );
  }
  if (
    store === 'dynamodb' &&
    !isToken(recordConcurrency) &&
    Number.isInteger(recordConcurrency) &&
    recordConcurrency > DYNAMODB_MAX_RECORD_CONCURRENCY
  ) {
    // The worker's cold start refuses it (lambda/config.ts), whatever the write budget allows.
    problems.push(
      `recordConcurrency (${recordConcurrency}) must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most ${DYNAMODB_MAX_RECORD_CONCURRENCY} records of a batch at once); lower recordConcurrency to ${DYNAMODB_MAX_RECORD_CONCURRENCY} or less`,
    );
  } else {
    range('recordConcurrency', recordConcurrency, 1, perBatch && fargate ? 1000 : 100);
  }
  return { recordConcurrency, perBatch };
}
