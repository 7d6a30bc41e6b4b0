import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * The settings of the DynamoDB store: the write budget of its capacity formula, its item shape, its alarm
 * threshold, the key prefixes the worker's role may touch, and the table's protection. Each is documented on
 * {@link WorkerSettings}.
 */
export const DYNAMODB_STORE_KEYS = [
  'maxWriteUnitsPerSecond',
  'transactItemsPerMessage',
  'itemSizeKb',
  'recordLatencyMs',
  'transactionConflictRatePercent',
  'domainKeyPrefixes',
  'deletionProtection',
  'backupRetention',
] as const satisfies readonly (keyof WorkerSettings)[];

/**
 * `store` of {@link SqsDatabaseWorkerProps} for one on-demand DynamoDB table (the worker function outside any VPC).
 *
 * @example
 * ```ts
 * new SqsDatabaseWorker(stack, 'Worker', {
 *   store: { kind: 'dynamodb', maxWriteUnitsPerSecond: 4000, domainKeyPrefixes: ['INVOICE#'] },
 *   workerEntry: 'src/invoice-worker.ts',
 *   alarmEmail: 'oncall@invoices.example.org',
 * });
 * ```
 */
export interface DynamoDbStoreProps extends Pick<WorkerSettings, (typeof DYNAMODB_STORE_KEYS)[number]> {
  readonly kind: 'dynamodb';
}
