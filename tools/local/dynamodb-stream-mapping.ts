import {
  type _Record,
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';

/** What a stream-triggered function returns: the records to retry, by sequence number (`ReportBatchItemFailures`). */
export type StreamHandler = (event: {
  Records: _Record[];
}) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>;

/** Options of {@link startDynamoStreamMapping}. */
export interface DynamoStreamMappingOptions {
  readonly streams: DynamoDBStreamsClient;
  /** The table's `LatestStreamArn`. */
  readonly streamArn: string;
  readonly handler: StreamHandler;
  /** Which records invoke the handler (the mapping's filter criteria). */
  readonly filter: (record: _Record) => boolean;
  /** Records per invocation, 1–1000. @default 100 */
  readonly batchSize?: number;
  /** Retries of a failed batch before its failed records are given up (`MaximumRetryAttempts`). @default 5 */
  readonly maxRetries?: number;
  /** Pause between empty reads of a shard (ms). @default 200 */
  readonly idleMs?: number;
  /** Pause before a retry (ms). @default 200 */
  readonly retryMs?: number;
  /** Where a given-up record's sequence number goes (the mapping's on-failure destination). */
  readonly onGiveUp?: (record: _Record, reason: string) => void;
}

/** What the mapping did, for a run's report and tests. */
export interface DynamoStreamMappingStats {
  readonly invocations: number;
  readonly retries: number;
  readonly recordsDelivered: number;
  readonly recordsGivenUp: number;
}

/** A running mapping. */
export interface DynamoStreamMapping {
  /** Waits until every shard is read to its end as of now and nothing is being retried, or `timeoutMs` passed. */
  drain(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops reading; resolves once the current invocation returned. */
  stop(): Promise<DynamoStreamMappingStats>;
}

/**
 * A local emulation of Lambda's event source mapping for DynamoDB Streams, as the local runtime needs it: reads every
 * shard of the stream from its start (`TRIM_HORIZON`), parents before children, passes the records that match
 * `filter` to `handler` in batches of `batchSize`, in shard order. A batch that reports failures (or throws) is
 * retried from its lowest failed sequence number, as Lambda does with `ReportBatchItemFailures` (no bisection), up to
 * `maxRetries` times; then the records still failing are given up (`onGiveUp`, the on-failure destination) and the
 * shard goes on. Records the filter drops are consumed without an invocation.
 */
export function startDynamoStreamMapping(options: DynamoStreamMappingOptions): DynamoStreamMapping {
  const state = {
    stopped: false,
    busy: false,
    caughtUp: false,
    stats: { invocations: 0, retries: 0, recordsDelivered: 0, recordsGivenUp: 0 },
  };
  const loop = runShards(options, state);
  return {
    async drain({ timeoutMs = 30_000 } = {}) {
      const until = Date.now() + timeoutMs;
      state.caughtUp = false;
      while (!(state.caughtUp && !state.busy)) {
        if (Date.now() > until)
          throw new Error(`the DynamoDB stream mapping did not catch up within ${timeoutMs} ms`);
        await sleep(50);
      }
    },
    async stop() {
      state.stopped = true;
      await loop;
      return { ...state.stats };
    },
  };
}

interface MappingState {
  stopped: boolean;
  busy: boolean;
  /** Set when a pass over every open shard read nothing new. */
  caughtUp: boolean;
  stats: {
    invocations: number;
    retries: number;
    recordsDelivered: number;
    recordsGivenUp: number;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the shards until stopped: each open shard's iterator advanced in turn, new shards picked up. */
async function runShards(options: DynamoStreamMappingOptions, state: MappingState): Promise<void> {
  const iterators = new Map<string, string | undefined>();
  const finished = new Set<string>();
  while (!state.stopped) {
    const shards = await describeShards(options);
    let read = 0;
    for (const shard of shards) {
      if (
        finished.has(shard.id) ||
        (shard.parent && !finished.has(shard.parent) && shards.some((s) => s.id === shard.parent))
      )
        continue;
      let iterator = iterators.get(shard.id);
      if (!iterator) iterator = await shardIterator(options, shard.id);
      const page = await options.streams.send(
        new GetRecordsCommand({ ShardIterator: iterator, Limit: options.batchSize ?? 100 }),
      );
      const records = page.Records ?? [];
      read += records.length;
      state.busy = true;
      try {
        await deliver(options, state, records.filter(options.filter));
      } finally {
        state.busy = false;
      }
      if (page.NextShardIterator) iterators.set(shard.id, page.NextShardIterator);
      else finished.add(shard.id);
    }
    if (read === 0) {
      state.caughtUp = true;
      await sleep(options.idleMs ?? 200);
    }
  }
}

/** The stream's shards (id and parent). */
async function describeShards(
  options: DynamoStreamMappingOptions,
): Promise<{ id: string; parent: string | undefined }[]> {
  const shards: { id: string; parent: string | undefined }[] = [];
  let start: string | undefined;
  do {
    const { StreamDescription } = await options.streams.send(
      new DescribeStreamCommand({ StreamArn: options.streamArn, ExclusiveStartShardId: start }),
    );
    for (const shard of StreamDescription?.Shards ?? []) {
      if (shard.ShardId) shards.push({ id: shard.ShardId, parent: shard.ParentShardId });
    }
    start = StreamDescription?.LastEvaluatedShardId;
  } while (start);
  return shards;
}

async function shardIterator(options: DynamoStreamMappingOptions, shardId: string): Promise<string> {
  const { ShardIterator } = await options.streams.send(
    new GetShardIteratorCommand({
      StreamArn: options.streamArn,
      ShardId: shardId,
      ShardIteratorType: 'TRIM_HORIZON',
    }),
  );
  if (!ShardIterator) throw new Error(`DynamoDB Streams gave no iterator for shard ${shardId}`);
  return ShardIterator;
}

/** One batch to the handler, retried from its lowest failure; what still fails after the retries is given up. */
async function deliver(
  options: DynamoStreamMappingOptions,
  state: MappingState,
  records: _Record[],
): Promise<void> {
  let batch = records;
  for (let attempt = 0; batch.length > 0; attempt += 1) {
    if (attempt > 0) {
      state.stats.retries += 1;
      await sleep(options.retryMs ?? 200);
    }
    state.stats.invocations += 1;
    let failures: string[];
    let reason = 'the function reported the record failed';
    try {
      const response = await options.handler({ Records: batch });
      failures = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    } catch (error) {
      failures = [batch[0]?.dynamodb?.SequenceNumber ?? ''];
      reason = `the function failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    const from = batch.findIndex((record) => failures.includes(record.dynamodb?.SequenceNumber ?? ''));
    state.stats.recordsDelivered += from < 0 ? batch.length : from;
    if (from < 0) return;
    if (attempt >= (options.maxRetries ?? 5)) {
      for (const record of batch.slice(from)) {
        state.stats.recordsGivenUp += 1;
        options.onGiveUp?.(record, reason);
      }
      return;
    }
    batch = batch.slice(from);
  }
}
