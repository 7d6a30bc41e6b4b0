import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { canaryDynamoHandler } from '../../canary/canary-dynamo-handler.ts';
import { ConfigError } from '../../errors.ts';
import type { QueueRetentions } from '../../retention/retention-guard.ts';
import type { CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import type { Store } from '../../worker/store.ts';
import { DEFAULT_QUEUE_RETENTIONS, inboxTtlSeconds } from './inbox-ttl.ts';

/** Options of {@link createDynamoStore}. */
export interface DynamoStoreOptions {
  /** The DynamoDB client (module scope). */
  readonly client: DynamoDBClient;
  /** The table of inbox, quarantine and (by default) domain items: `PK` and `SK` strings, TTL on `ttl`. */
  readonly tableName: string;
  /**
   * The queues' retentions: an inbox item lives (DynamoDB TTL) for source + DLQ retention, the window in which a
   * copy of its message can still arrive (the PostgreSQL purge guard's rule). @default 14 days each (the SQS maximum)
   */
  readonly retention?: QueueRetentions;
  /**
   * Seconds a lease outlives the time its record was given (clock skew, a request still in flight): a PROCESSING
   * item is taken over only after its worker's time is up by this much. @default 30
   */
  readonly leaseMarginSeconds?: number;
}

/** Records a DynamoDB worker runs at once at most (a standard queue's default batch). */
const DYNAMODB_MAX_RECORD_CONCURRENCY = 10;

/**
 * The DynamoDB store of a worker: its clients, table and settings, validated once; the engine's `Store`.
 *
 * @internal
 */
export interface DynamoStore extends Store {
  readonly kind: 'dynamodb';
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Seconds an inbox item lives after its last write (TTL). */
  readonly inboxTtlSeconds: number;
  readonly leaseMarginMs: number;
  /** The engine's commit strategy on this store (see `commit-dynamodb.ts`). */
  commitStrategy(settings: EngineSettings): CommitStrategy;
}

const MAX_RETENTION_SECONDS = 14 * 86_400;

/**
 * Creates the DynamoDB store of a worker (conditional-put gate; domain items and inbox completion in one
 * TransactWriteItems; see docs/dynamodb.md).
 *
 * @throws ConfigError naming each invalid option and the fix.
 *
 * @example
 * ```ts
 * const store = createDynamoStore({ client: new DynamoDBClient({}), tableName: process.env.DYNAMODB_TABLE! });
 * ```
 */
export function createDynamoStore(options: DynamoStoreOptions): DynamoStore {
  const problems: string[] = [];
  if (!/^[a-zA-Z0-9_.-]{3,255}$/.test(options.tableName ?? '')) {
    problems.push(
      `tableName must be a DynamoDB table name: 3–255 characters of a-z, A-Z, 0-9, _ - . (given "${options.tableName}"); set DYNAMODB_TABLE`,
    );
  }
  const retention = options.retention ?? DEFAULT_QUEUE_RETENTIONS;
  for (const [name, value] of Object.entries(retention)) {
    if (!Number.isInteger(value) || value < 60 || value > MAX_RETENTION_SECONDS) {
      problems.push(`retention.${name} must be whole seconds from 60 to 1209600 (14 days) (given ${value})`);
    }
  }
  const leaseMarginSeconds = options.leaseMarginSeconds ?? 30;
  if (!Number.isFinite(leaseMarginSeconds) || leaseMarginSeconds < 0 || leaseMarginSeconds > 3600) {
    problems.push(`leaseMarginSeconds must be from 0 to 3600 (given ${leaseMarginSeconds})`);
  }
  if (problems.length > 0)
    throw new ConfigError(`Invalid DynamoDB store options:\n- ${problems.join('\n- ')}`);
  const store: DynamoStore = {
    kind: 'dynamodb',
    client: options.client,
    tableName: options.tableName,
    inboxTtlSeconds: inboxTtlSeconds(retention),
    leaseMarginMs: leaseMarginSeconds * 1000,
    canaryHandler: canaryDynamoHandler,
    // DynamoDB records hold no pooled connection: up to a batch of 10 at once.
    problems: ({ recordConcurrency }) =>
      !Number.isInteger(recordConcurrency) ||
      recordConcurrency < 1 ||
      recordConcurrency > DYNAMODB_MAX_RECORD_CONCURRENCY
        ? [
            `recordConcurrency must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with a DynamoDB store (given ${recordConcurrency})`,
          ]
        : [],
    commitStrategy(settings) {
      // The strategy's code (the document client, the claim and the transaction) is imported on the first batch:
      // making a store (a worker's init, an options check) loads none of it.
      let strategy: Promise<CommitStrategy> | undefined;
      return {
        concurrent: true,
        settlesAtCommit: false,
        commitReserveMs: 0,
        async commit(batch) {
          strategy ??= import('./commit-dynamodb.ts').then(({ createDynamoDbCommit }) =>
            createDynamoDbCommit(store, settings),
          );
          return (await strategy).commit(batch);
        },
      };
    },
  };
  return store;
}
