import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_METRICS } from '../../lambda/health/health-metrics.ts';
import { collectDynamoHealth } from '../../lambda/stores/dynamodb/collect-dynamo-health.ts';
import { inboxKey, outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';

// The DynamoDB store's health figures, read from items as the store writes them, on DynamoDB Local.
const dynamo = useTestDynamoDb();
const NOW = Date.parse('2026-12-06T12:00:00.000Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
let table: string;

beforeAll(async () => {
  table = await dynamo.createTable('health');
  const items = [
    // Inbox of case-worker: two PROCESSING (one lease expired), one FAILED_RETRYABLE, one FAILED_TERMINAL, one COMPLETED.
    {
      ...inboxKey('case-worker', 'k-dead'),
      status: 'PROCESSING',
      startedAt: ago(600_000),
      leaseExpiresAt: NOW - 1,
    },
    {
      ...inboxKey('case-worker', 'k-live'),
      status: 'PROCESSING',
      startedAt: ago(5_000),
      leaseExpiresAt: NOW + 60_000,
    },
    { ...inboxKey('case-worker', 'k-retry'), status: 'FAILED_RETRYABLE', firstSeenAt: ago(120_000) },
    { ...inboxKey('case-worker', 'k-term'), status: 'FAILED_TERMINAL', firstSeenAt: ago(1_000) },
    { ...inboxKey('case-worker', 'k-done'), status: 'COMPLETED', startedAt: ago(9_000_000) },
    // Another consumer's items in the same table are not this worker's.
    {
      ...inboxKey('other-worker', 'k-x'),
      status: 'PROCESSING',
      startedAt: ago(9_000_000),
      leaseExpiresAt: 0,
    },
    // Quarantine: one open, one released.
    {
      PK: 'QUARANTINE#aaa',
      SK: 'WORKER#case-worker',
      firstQuarantinedAt: ago(1_800_000),
      reasonCode: 'INVALID_JSON',
    },
    {
      PK: 'QUARANTINE#bbb',
      SK: 'WORKER#case-worker',
      firstQuarantinedAt: ago(9_000_000),
      releasedAt: ago(1),
    },
    // Outbox: one PENDING, one PUBLISHED.
    { ...outboxKey('e-pending'), status: 'PENDING', createdAt: ago(30_000) },
    { ...outboxKey('e-sent'), status: 'PUBLISHED', createdAt: ago(9_000_000) },
    // Domain items count for nothing.
    { PK: 'CASE#c-1', SK: 'META', status: 'PROCESSING', startedAt: ago(9_000_000) },
  ];
  await dynamo.doc.send(
    new BatchWriteCommand({ RequestItems: { [table]: items.map((Item) => ({ PutRequest: { Item } })) } }),
  );
});

describe('Function: collectDynamoHealth()', () => {
  it("counts the consumer's unfinished items, open quarantine, expired leases and pending outbox items, with their ages", async () => {
    // Act
    const figures = await collectDynamoHealth(
      { doc: dynamo.doc, tableName: table },
      { consumer: 'case-worker', now: () => NOW },
    );

    // Assess
    expect(figures).toMatchObject({
      consumer: 'case-worker',
      quarantine: { open: 1, oldestOpenAgeMs: 1_800_000 },
      inbox: {
        byStatus: { RECEIVED: 0, PROCESSING: 2, FAILED_RETRYABLE: 1, FAILED_TERMINAL: 1 },
        oldestProcessingAgeMs: 600_000,
        oldestRetryableAgeMs: 120_000,
        oldestInFlightAgeMs: 600_000,
      },
      outbox: { pending: 1, oldestPendingAgeMs: 30_000 },
      locks: { waiting: 0, oldestWaitMs: null },
      deadlocks: 0,
      leasesExpired: 1,
      truncated: false,
    });
    expect(figures.scanned).toBe(11);
  });

  it('stops at maxItems on a larger table and says that the counts cover part of it', async () => {
    // Act: pages of 4 items, at most 4 read.
    const figures = await collectDynamoHealth(
      { doc: dynamo.doc, tableName: table },
      {
        consumer: 'case-worker',
        now: () => NOW,
        maxItems: 4,
        pageSize: 4,
      },
    );

    // Assess: one page read, not the table's 11 items.
    expect(figures.truncated).toBe(true);
    expect(figures.scanned).toBe(4);
  });
});

/** The DynamoDB health Lambda entry, loaded against this file's table with metrics enabled. */
async function loadHealthHandler() {
  Object.assign(process.env, {
    WORKER_STORE: 'dynamodb',
    DYNAMODB_TABLE: table,
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    WORKER_CONSUMER: 'case-worker',
    POWERTOOLS_METRICS_DISABLED: 'false',
  });
  try {
    return (await import('../../lambda/handlers/health-dynamodb.ts')).handler;
  } finally {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  }
}

describe('Lambda entry: health-dynamodb (EMF)', () => {
  it("publishes the table's figures under the health job's metric names, with a heartbeat", async () => {
    // Prepare
    const handler = await loadHealthHandler();

    // Act
    const { result, lines, error } = await captureOutput(() => handler());

    // Assess: one EMF document with every figure; the counts are the items' (the clock is the real one, so the lease
    // that was live at NOW has expired by now too).
    expect(error).toBeUndefined();
    const emf = lines.filter((line) => '_aws' in line);
    expect(emf).toHaveLength(1);
    for (const name of Object.values(HEALTH_METRICS)) expect(emf[0]).toHaveProperty(name);
    expect(emfSum(lines, HEALTH_METRICS.heartbeat)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.quarantineOpen)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.inboxProcessing)).toBe(2);
    expect(emfSum(lines, HEALTH_METRICS.inboxFailedRetryable)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.outboxPending)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.inboxLeasesExpired)).toBe(result?.leasesExpired);
    expect(result?.leasesExpired).toBeGreaterThanOrEqual(1);
    expect(result).toMatchObject({ consumer: 'case-worker', truncated: false, scanned: 11 });
  });
});
