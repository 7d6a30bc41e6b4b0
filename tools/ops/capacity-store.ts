import { UsageError } from './errors.ts';

/** Flags of `sqs-worker capacity` that belong to one store's formula only. */
const STORE_FLAGS = {
  postgres: ['--db-max-connections', '--db-write-iops-budget', '--write-iops-per-message'],
  dynamodb: [
    '--max-write-units-per-second',
    '--transact-items-per-message',
    '--item-size-kb',
    '--record-latency-ms',
    '--record-concurrency',
  ],
} as const;

/**
 * The store of `sqs-worker capacity --store`, checked against the flags given: a flag of the other store's
 * formula is refused rather than ignored, and PostgreSQL's formula needs `--db-max-connections`.
 *
 * @param given the flags the operator set (`--db-max-connections`, …).
 * @throws UsageError naming the store or the misplaced flags and the fix.
 */
export function capacityStore(store: string | undefined, given: readonly string[]): 'postgres' | 'dynamodb' {
  if (store !== 'postgres' && store !== 'dynamodb') {
    throw new UsageError(`--store (${String(store)}) must be postgres or dynamodb; set one of them`);
  }
  const other = store === 'postgres' ? 'dynamodb' : 'postgres';
  const misplaced = given.filter((flag) => (STORE_FLAGS[other] as readonly string[]).includes(flag));
  if (misplaced.length > 0) {
    throw new UsageError(
      `${misplaced.join(', ')} ${misplaced.length > 1 ? 'apply' : 'applies'} only to --store ${other} (given --store ${store}); remove ${misplaced.length > 1 ? 'them' : 'it'} or set --store ${other}`,
    );
  }
  if (store === 'postgres' && !given.includes('--db-max-connections')) {
    throw new UsageError(
      '--db-max-connections is required with --store postgres (the formula divides the connections of the database); give max_connections of the database or the proxy budget, or set --store dynamodb',
    );
  }
  return store;
}
