import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { BatchWriteCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { caseItemKey, exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { Poller } from '../../lambda/runtimes/poller/start-poller.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { probeDynamoStore } from '../../lambda/stores/dynamodb/probe-dynamo-store.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { startLocalPoller } from '../../tools/local/local-poller.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { SOAK_MAPPING, soakMessages } from '../support/soak-messages.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const fixture = await localQueueFixture({ store: 'dynamodb' });
// On disk, so that the soak can stop DynamoDB Local mid-run and start it again with every committed item.
const dynamo = useTestDynamoDb({ restartable: true });
// The worker's table calls go through the local IAM layer too (its grants are scoped by key prefix).
beforeAll(() => fixture.frontDynamoDb(dynamo.endpoint));
let table: string;

const TOTAL = 2000;
const DUPLICATES = 600; // 30 %
const UNIQUE = TOTAL - DUPLICATES;
const POISON = 8;
const TERMINAL = 10;
const EFFECTFUL = UNIQUE - POISON - TERMINAL;
const PAYMENTS = Math.floor(EFFECTFUL / 2);
const DEADLINES = EFFECTFUL - PAYMENTS;
const ACCOUNTS = 13;
// A run takes 36–48 s beside other test files on 2 cores, restarts included (each one down 3.9–6.4 s), and 100–111 s
// beside the whole suite with four more test runs on the machine; a drain waits twice the slowest, and the test for
// the drain and its setup.
const DRAIN_TIMEOUT_MS = 240_000;
const SOAK_TEST_TIMEOUT_MS = 300_000;

// The PostgreSQL soak (worker-soak.test.ts) on the DynamoDB store, with both runtimes: the local event source mapping
// (Lambda's batch rules, two of its pollers) and two long-running pollers (lambda/runtimes/poller/) over engines of their own,
// competing for one queue. It has no "stuck" messages: they hold a PostgreSQL row lock, which DynamoDB has not.
// In each run DynamoDB Local is stopped and started again on the same data twice, when a third and two thirds of the
// records have settled: the workers' calls fail while it is down (connection refused through the IAM layer), records
// whose worker lost it after the gate come back to a PROCESSING item under a live lease, and none may be applied
// twice, lost or sent to the DLQ. The tables have no stream (the soak writes no outbox event): DynamoDB Local in files
// spends each write describing a stream of a few thousand records, and beside the suite the second run's pollers
// settled 180 records in 120 s.
const RESTARTS = 2;
describe.each(['event-source-mapping', 'poller'] as const)(
  'Soak on DynamoDB (%s): 2,000 messages, 600 duplicates, crashes after commit on 5 in 100 first deliveries, 2 pollers',
  (runtime) => {
    it(
      'applies every idempotency key exactly once and accounts for every key',
      async () => {
        // Prepare: the cases of the deadline requests. Each request adds 1 to the case's deadlineVersion, an effect
        // that is NOT idempotent by itself; each payment adds to its account's balance (ADD), not idempotent either.
        table = await dynamo.createTable(`soak-${runtime}`, { stream: false });
        const cases = Array.from({ length: DEADLINES }, (_, i) => ({
          ...caseItemKey(`soak-case-${i + 1}`),
          stage: 'INVESTIGATION',
          version: 1,
        }));
        for (let i = 0; i < cases.length; i += 25) {
          await dynamo.doc.send(
            new BatchWriteCommand({
              RequestItems: { [table]: cases.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
            }),
          );
        }
        const { bodies, hooks } = soakMessages({
          payments: PAYMENTS,
          accounts: ACCOUNTS,
          deadlines: DEADLINES,
          poison: POISON,
          terminal: TERMINAL,
          duplicates: DUPLICATES,
        });
        expect(bodies).toHaveLength(TOTAL);

        const { queueUrl, dlqUrl } = await fixture.queues({
          visibilityTimeoutSeconds: 2,
          // Lambda's side has no breaker here, so each outage spends receive counts (a few per outage of the restart's
          // length, logged below); the margin keeps every good message out of the DLQ.
          maxReceiveCount: 10,
          tableName: table,
        });
        // Each runs with its role: the Lambda worker's (stage dev-dynamodb), the poller's task role (fargate-dynamodb).
        const component = runtime === 'event-source-mapping' ? 'worker' : 'poller';
        const clients = fixture.as(component);
        const recorder = new OutcomeRecorder();
        const outages: Promise<number>[] = [];
        let restartFailure: Error | undefined;
        let settled = 0;
        let restarting = false;
        const onOutcome: typeof recorder.onOutcome = (outcome) => {
          recorder.onOutcome(outcome);
          settled += 1;
          if (restarting || outages.length >= RESTARTS || settled < (TOTAL * (outages.length + 1)) / 3)
            return;
          restarting = true;
          // SIGTERM: DynamoDB Local loses a write it acknowledged just before a SIGKILL (its SQLite is written after the
          // answer), which DynamoDB never does; stopped this way it keeps every acknowledged write, as the service would.
          const outage = dynamo.restart('SIGTERM').finally(() => (restarting = false));
          // A restart that failed leaves DynamoDB down: the drain would only time out, so say why.
          outage.catch((error: Error) => (restartFailure ??= error));
          outages.push(outage);
        };
        const workerOptions = () => ({
          consumer: 'case-worker',
          handlers: exampleDynamoHandlers,
          store: createDynamoStore({ client: fixture.dynamodbAs(component), tableName: table }),
          logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
          metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
          recordConcurrency: 4,
          backoff: { baseSeconds: 1, maxSeconds: 2 },
          onOutcome,
        });
        /** A poller over an engine on the poller's client; its pause probe is the store's own (a GetItem). */
        const startDynamoPoller = async () => {
          let poller: Poller | undefined;
          const options = workerOptions();
          const engine = createBatchEngine({
            ...options,
            onRecordSettled: (outcome) => poller?.recordSettled(outcome),
          });
          return startLocalPoller({
            bindOutcomes: (started) => {
              poller = started;
            },
            sqs: clients.sqs,
            queueUrl,
            processBatch: engine.processBatch,
            concurrency: 4,
            batchSize: 10,
            waitSeconds: 1,
            visibilitySeconds: 2,
            probe: () => probeDynamoStore(options.store, 'case-worker', 1000),
            logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
            metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
            hooks,
          });
        };

        // Act
        const started = Date.now();
        await fixture.send(queueUrl, bodies);
        let stats: { deletesDropped: number; messagesReceived: number; maxConcurrency: number };
        if (runtime === 'event-source-mapping') {
          const esm = await startEventSourceMapping({
            sqs: clients.sqs,
            queueUrl,
            handler: createWorker({ ...workerOptions(), sqs: clients.sqs }),
            ...SOAK_MAPPING,
            hooks,
          });
          try {
            await esm.drain({ timeoutMs: DRAIN_TIMEOUT_MS }).catch((error: Error) => {
              throw restartFailure
                ? new Error(`DynamoDB Local did not come back: ${restartFailure.message}`)
                : error;
            });
          } finally {
            const final = await esm.stop();
            stats = { ...final, maxConcurrency: final.maxObservedConcurrency };
          }
        } else {
          const pollers = [await startDynamoPoller(), await startDynamoPoller()];
          try {
            for (const poller of pollers) {
              await poller.drain({ timeoutMs: DRAIN_TIMEOUT_MS }).catch((error: Error) => {
                throw restartFailure
                  ? new Error(`DynamoDB Local did not come back: ${restartFailure.message}`)
                  : error;
              });
            }
          } finally {
            const finals = await Promise.all(pollers.map((poller) => poller.stop()));
            stats = {
              deletesDropped: finals.reduce((sum, f) => sum + f.deletesDropped, 0),
              messagesReceived: finals.reduce((sum, f) => sum + f.messagesReceived, 0),
              // Records in flight at once in one poller; both pollers must have taken batches (asserted below).
              maxConcurrency: Math.max(...finals.map((f) => f.maxInFlight)),
            };
            expect(finals.every((f) => f.batches > 0)).toBe(true);
          }
        }
        const seconds = (Date.now() - started) / 1000;
        const downMs = await Promise.all(outages);

        // Assess: read the whole table back.
        const items: Record<string, unknown>[] = [];
        for await (const page of paginateScan(
          { client: dynamo.doc },
          { TableName: table, ConsistentRead: true },
        )) {
          items.push(...(page.Items ?? []));
        }
        const of = (prefix: string) => items.filter((item) => String(item.PK).startsWith(prefix));
        // Exactly one effect per key: one ledger item per payment, every payment added to its balance once…
        const balances = of('ACCOUNT#');
        const expectedBalance = (account: number) =>
          Array.from({ length: PAYMENTS }, (_, i) => i)
            .filter((i) => i % ACCOUNTS === account)
            .reduce((sum, i) => sum + i + 1, 0);
        expect(of('LEDGER#')).toHaveLength(PAYMENTS);
        expect(balances.reduce((sum, item) => sum + Number(item.entries), 0)).toBe(PAYMENTS);
        for (const item of balances) {
          const account = Number(String(item.PK).replace('ACCOUNT#acct-', ''));
          expect(Number(item.balance)).toBe(expectedBalance(account));
        }
        // …every case's deadline applied once (deadlineVersion 1, never 2)…
        const soakCases = of('CASE#soak-case-').filter((item) => item.SK === 'META');
        expect(soakCases).toHaveLength(DEADLINES);
        expect(soakCases.filter((item) => item.deadlineVersion === 1)).toHaveLength(DEADLINES);
        // …and effects + quarantine + DLQ account for every key.
        const inbox = of('IDEMP#');
        const completed = inbox.filter((item) => item.status === 'COMPLETED').length;
        const quarantine = of('QUARANTINE#');
        const reasons = Object.fromEntries(
          ['CASE_NOT_FOUND', 'INVALID_JSON'].map((code) => [
            code,
            quarantine.filter((item) => item.reasonCode === code).length,
          ]),
        );
        const dead = await fixture.receiveAll(dlqUrl);
        const outcomes = recorder.counts();
        console.log(
          [
            `soak (DynamoDB, ${runtime}): ${TOTAL} messages (${UNIQUE} keys + ${DUPLICATES} duplicates) in ${seconds.toFixed(1)} s`,
            `  effects: ${completed} completed keys; quarantine: ${quarantine.length} (${JSON.stringify(reasons)}); DLQ: ${dead.length}`,
            `  outcomes: ${JSON.stringify(outcomes)}`,
            `  crashes after commit: ${stats.deletesDropped}; received ${stats.messagesReceived}; max concurrency ${stats.maxConcurrency}`,
            `  DynamoDB Local stopped and started ${downMs.length} times, down ${downMs.map((ms) => `${ms} ms`).join(', ')}`,
          ].join('\n'),
        );
        expect(completed).toBe(EFFECTFUL);
        expect(reasons).toEqual({ CASE_NOT_FOUND: TERMINAL, INVALID_JSON: POISON });
        expect(dead).toEqual([]);
        expect(completed + quarantine.length + dead.length).toBe(UNIQUE);
        // 5 % of the first deliveries chosen by message id crash, of those that commit at once: the count follows the
        // schedule (around an outage first deliveries fail instead); at least 10 keeps the check about the recovery.
        expect(stats.deletesDropped).toBeGreaterThanOrEqual(10);
        expect(outcomes.DUPLICATE).toBeGreaterThanOrEqual(DUPLICATES + stats.deletesDropped);
        expect(stats.maxConcurrency).toBeGreaterThan(1);
        expect(downMs).toHaveLength(RESTARTS);
        expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      },
      SOAK_TEST_TIMEOUT_MS,
    );
  },
);
