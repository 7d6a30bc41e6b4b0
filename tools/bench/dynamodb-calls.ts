import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { dynamoItemSize } from '../../lambda/stores/dynamodb/item-size.ts';
import { createDynamoDbTable } from '../local/create-dynamodb-table.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { startLocalDynamoDb } from '../local/local-dynamodb.ts';
import { caseIds, chunk, deadlineRecords } from './bench-messages.ts';
import { countDynamoCalls, type DynamoCallCounts } from './dynamo-call-counter.ts';
import { dynamoMinimalBaseline } from './dynamo-minimal-baseline.ts';
import { quietTelemetry } from './quiet-telemetry.ts';
import { renderDynamoCalls, renderDynamoTargets } from './render-dynamodb-calls.ts';
import { startRoundTripProxy } from './round-trip-proxy.ts';
import { median, percentile } from './statistics.ts';

/** The two sides of the DynamoDB line. */
export type DynamoSide = 'minimal' | 'store';

/** One side's figures: calls and units per message, exact; times, medians over the rounds. */
export interface DynamoSideResult {
  readonly side: DynamoSide;
  /** Calls per message by operation name, from the measured messages of every round. */
  readonly callsPerMessage: Readonly<Record<string, number>>;
  /** Write units DynamoDB Local reports (it reports a TransactWriteItems as 2 units per KiB of its largest item). */
  readonly writeUnitsPerMessage: number;
  readonly readUnitsPerMessage: number;
  /**
   * Write units the service bills, from the items written: 1 per single-item write and 2 per TransactWriteItems
   * item, each per KiB started (every item here is under 1 KiB: {@link DynamoSideResult.largestItemBytes}).
   */
  readonly serviceWriteUnitsPerMessage: number;
  /** The largest of a measured message's items (inbox, case, deadline), read back, as DynamoDB sizes them. */
  readonly largestItemBytes: number;
  /** HTTP round trips per message, counted by the delaying proxy (client write bursts after a response). */
  readonly roundTripsPerMessage: number;
  /** Messages per second, median over the rounds. */
  readonly messagesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The same counts for copies of completed messages (resends: a new messageId, the same key). */
  readonly duplicate: {
    readonly callsPerMessage: Readonly<Record<string, number>>;
    readonly serviceWriteUnitsPerMessage: number;
  };
}

/** The DynamoDB line: the store under the worker vs the hand-written minimal, under a delay to DynamoDB Local. */
export interface DynamoCallsBench {
  readonly delayMs: number;
  readonly messages: number;
  readonly rounds: number;
  readonly roundTripMs: number;
  readonly minimal: DynamoSideResult;
  readonly store: DynamoSideResult;
}

/** Options of {@link benchDynamoCalls}. */
export interface DynamoCallsOptions {
  /** Delay per direction of every chunk between the clients and DynamoDB Local (ms). @default 1 */
  readonly delayMs?: number;
  /** Measured messages per side and round. @default 200 */
  readonly messages?: number;
  /** Interleaved rounds (side order alternating). @default 3 */
  readonly rounds?: number;
  /** Copies of completed messages per side, counted apart. @default 20 */
  readonly duplicates?: number;
  readonly log?: (line: string) => void;
}

const CONSUMER = 'bench-worker';
const WARMUP_MESSAGES = 50;

/** A side: processes a batch of records, returning each record's time (ms). */
interface Side {
  process(records: readonly SQSRecord[]): Promise<number[]>;
  readonly counter: ReturnType<typeof countDynamoCalls>;
}

/**
 * Starts DynamoDB Local and a delaying proxy in front of it (the bench's round-trip proxy, `delayMs` per direction),
 * and runs, side by side, the worker on the DynamoDB store (`createWorker` with `createDynamoStore` and the example
 * DynamoDB handlers, batches of 10, one record at a time) and the hand-written minimal (`dynamo-minimal-baseline.ts`)
 * on `CaseDeadlineCalculationRequested` messages of existing cases. Every call of each side is counted by operation
 * name and asked for its consumed capacity by a middleware on its client (`dynamo-call-counter.ts`).
 */
export async function benchDynamoCalls(options: DynamoCallsOptions = {}): Promise<DynamoCallsBench> {
  const { delayMs = 1, messages = 200, rounds = 3, duplicates = 20 } = options;
  const log = options.log ?? (() => {});
  const server = await startLocalDynamoDb();
  const clients: DynamoDBClient[] = [];
  const client = (endpoint: string) => {
    const made = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    clients.push(made);
    return made;
  };
  const port = Number(new URL(server.endpoint).port);
  const proxy = await startRoundTripProxy({ host: '127.0.0.1', port }, { delayMs });
  try {
    const direct = client(server.endpoint);
    const table = `bench-${randomBytes(3).toString('hex')}`;
    // No stream: the deployed table's stream changes neither the calls nor their units, and slows DynamoDB Local.
    await createDynamoDbTable(direct, table, { stream: false });
    const seed = DynamoDBDocumentClient.from(direct);
    const proxied = `http://127.0.0.1:${proxy.port}`;
    const sides: Record<DynamoSide, Side> = {
      minimal: minimalSide(client(proxied), table),
      store: storeSide(client(proxied), table),
    };
    const prepare = async (prefix: string, count: number) => {
      for (const ids of chunk(caseIds(prefix, count), 25)) {
        await seed.send(
          new BatchWriteCommand({
            RequestItems: {
              [table]: ids.map((id) => ({
                PutRequest: { Item: { PK: `CASE#${id}`, SK: 'META', stage: 'INVESTIGATION', version: 1 } },
              })),
            },
          }),
        );
      }
      return deadlineRecords(prefix, count);
    };
    for (const name of ['minimal', 'store'] as const) {
      await runBatches(sides[name], await prepare(`warm-${name}`, WARMUP_MESSAGES));
    }
    const roundTripMs = await measureRoundTrip(DynamoDBDocumentClient.from(client(proxied)), table);
    const measured = { minimal: emptyTally(), store: emptyTally() };
    for (let round = 0; round < rounds; round += 1) {
      const order: DynamoSide[] = round % 2 === 0 ? ['minimal', 'store'] : ['store', 'minimal'];
      for (const name of order) {
        const records = await prepare(`r${round}-${name}`, messages);
        log(`  dynamodb round ${round + 1}/${rounds}: ${name}, ${messages} messages`);
        await tallyRun(sides[name], records, proxy, measured[name]);
      }
    }
    const result = (name: DynamoSide): Promise<DynamoSideResult> =>
      sideResult(name, sides[name], measured[name], { doc: seed, table }, duplicates, prepare);
    return {
      delayMs,
      messages,
      rounds,
      roundTripMs,
      minimal: await result('minimal'),
      store: await result('store'),
    };
  } finally {
    for (const made of clients) made.destroy();
    await proxy.close();
    await server.stop();
  }
}

/** What a side's measured runs added up to. */
interface Tally {
  messages: number;
  roundTrips: number;
  calls: Record<string, number>;
  write: number;
  read: number;
  serviceWrite: number;
  last?: SQSRecord;
  rates: number[];
  times: number[];
}

const emptyTally = (): Tally => ({
  messages: 0,
  roundTrips: 0,
  calls: {},
  write: 0,
  read: 0,
  serviceWrite: 0,
  rates: [],
  times: [],
});

/** Write units the service bills for the counted writes, every item under 1 KiB (checked by the caller). */
const serviceUnits = (counts: DynamoCallCounts) => counts.itemWrites + 2 * counts.transactItems;

/** Runs `records` through `side` in batches of 10, the calls counted into `tally`. */
async function tallyRun(
  side: Side,
  records: readonly SQSRecord[],
  proxy: { counts(): Promise<{ roundTrips: number }> },
  tally: Tally,
): Promise<void> {
  side.counter.reset();
  const before = (await proxy.counts()).roundTrips;
  const started = performance.now();
  const times = await runBatches(side, records);
  const elapsed = performance.now() - started;
  tally.roundTrips += (await proxy.counts()).roundTrips - before;
  const counts = side.counter.counts();
  addCounts(tally, counts);
  tally.messages += records.length;
  tally.last = records.at(-1);
  tally.rates.push((records.length / elapsed) * 1000);
  tally.times.push(...times);
}

function addCounts(tally: Tally, counts: DynamoCallCounts): void {
  for (const [operation, count] of Object.entries(counts.calls)) {
    tally.calls[operation] = (tally.calls[operation] ?? 0) + count;
  }
  tally.write += counts.units.write;
  tally.read += counts.units.read;
  tally.serviceWrite += serviceUnits(counts);
}

const perMessage = (calls: Record<string, number>, messages: number) =>
  Object.fromEntries(Object.entries(calls).map(([operation, count]) => [operation, count / messages]));

/** A side's figures, with its duplicates counted after the measured runs (resends of completed messages). */
async function sideResult(
  name: DynamoSide,
  side: Side,
  tally: Tally,
  items: { doc: DynamoDBDocumentClient; table: string },
  duplicates: number,
  prepare: (prefix: string, count: number) => Promise<SQSRecord[]>,
): Promise<DynamoSideResult> {
  const { doc, table } = items;
  const originals = await prepare(`dup-${name}`, duplicates);
  await runBatches(side, originals);
  side.counter.reset();
  await runBatches(
    side,
    originals.map((record) => ({ ...record, messageId: randomUUID() })),
  );
  const copies = side.counter.counts();
  return {
    side: name,
    callsPerMessage: perMessage(tally.calls, tally.messages),
    writeUnitsPerMessage: tally.write / tally.messages,
    readUnitsPerMessage: tally.read / tally.messages,
    serviceWriteUnitsPerMessage: tally.serviceWrite / tally.messages,
    largestItemBytes: tally.last ? await largestItem(doc, table, tally.last) : 0,
    roundTripsPerMessage: tally.roundTrips / tally.messages,
    messagesPerSecond: median(tally.rates),
    p50Ms: percentile(tally.times, 50),
    p99Ms: percentile(tally.times, 99),
    duplicate: {
      callsPerMessage: perMessage({ ...copies.calls }, duplicates),
      serviceWriteUnitsPerMessage: serviceUnits(copies) / duplicates,
    },
  };
}

/** The size of the largest item a message wrote (its inbox item, case item and deadline item), read back. */
async function largestItem(doc: DynamoDBDocumentClient, table: string, record: SQSRecord): Promise<number> {
  const envelope = JSON.parse(record.body) as { idempotencyKey: string; payload: { caseId: string } };
  const keys = [
    inboxKey(CONSUMER, envelope.idempotencyKey),
    { PK: `CASE#${envelope.payload.caseId}`, SK: 'META' },
    { PK: `CASE#${envelope.payload.caseId}`, SK: 'DEADLINE#INVESTIGATION_SLA' },
  ];
  let largest = 0;
  for (const Key of keys) {
    const { Item } = await doc.send(new GetCommand({ TableName: table, Key, ConsistentRead: true }));
    largest = Math.max(largest, Item ? dynamoItemSize(Item) : 0);
  }
  return largest;
}

/** Runs `records` through `side` in batches of 10; each record's time (ms). */
async function runBatches(side: Side, records: readonly SQSRecord[]): Promise<number[]> {
  const times: number[] = [];
  for (const batch of chunk(records, 10)) times.push(...(await side.process(batch)));
  return times;
}

/** The median time of a GetItem of a missing key through the proxy (ms): a modelled round trip and the server's time. */
async function measureRoundTrip(doc: DynamoDBDocumentClient, table: string): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < 31; run += 1) {
    const started = performance.now();
    await doc.send(new GetCommand({ TableName: table, Key: { PK: 'bench-missing', SK: 'none' } }));
    if (run > 0) times.push(performance.now() - started);
  }
  return median(times);
}

/** The hand-written minimal on its own client. */
function minimalSide(client: DynamoDBClient, table: string): Side {
  const counter = countDynamoCalls(client);
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return { counter, process: (records) => dynamoMinimalBaseline(doc, table, CONSUMER, records) };
}

/** The worker on the DynamoDB store, as a Lambda function runs it (an SQS event, a 30 s context), on its own client. */
function storeSide(client: DynamoDBClient, table: string): Side {
  const counter = countDynamoCalls(client);
  let recordTimes: number[] = [];
  const { logger, metrics } = quietTelemetry(CONSUMER, (fields) => {
    if (typeof fields.processingMs === 'number') recordTimes.push(fields.processingMs);
  });
  const handler = createWorker({
    consumer: CONSUMER,
    handlers: exampleDynamoHandlers,
    store: createDynamoStore({ client, tableName: table }),
    logger,
    metrics,
    recordConcurrency: 1,
    now: () => performance.timeOrigin + performance.now(),
  });
  return {
    counter,
    async process(records) {
      recordTimes = [];
      const response = await handler(
        { Records: [...records] },
        lambdaContext({ functionName: 'bench-worker', timeoutMs: 30_000 }),
      );
      if (response.batchItemFailures.length > 0) {
        throw new Error(
          `The DynamoDB worker reported ${response.batchItemFailures.length} of ${records.length} records as failed; the bench expects every record to complete (are the cases created?)`,
        );
      }
      return recordTimes;
    },
  };
}

/** `npm run bench -- --only dynamodb`: the DynamoDB line and its target alone (DynamoDB Local, no PostgreSQL). */
export async function runDynamoCallsAlone(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log('DynamoDB calls per message: starting DynamoDB Local');
  const bench = await benchDynamoCalls({ log });
  console.log(
    `${renderDynamoCalls(bench)}\n\nTargets (figures only: a missed target does not fail the bench)`,
  );
  console.log(renderDynamoTargets(bench));
}
