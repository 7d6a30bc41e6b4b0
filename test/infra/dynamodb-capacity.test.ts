import { describe, expect, it } from 'vitest';
import {
  DYNAMODB_CAPACITY_DEFAULTS,
  safeDynamoDbConcurrency,
} from '../../lib/stores/dynamodb/dynamodb-capacity.ts';

describe('Function: safeDynamoDbConcurrency()', () => {
  it('derives the concurrency from the write budget: gate put + 2 × transaction items per message', () => {
    // Act: 2 transaction items → 1 + 2 × 2 = 5 WCU per message; 20 ms per record → 50 messages/s per worker
    const result = safeDynamoDbConcurrency({
      maxWriteUnitsPerSecond: 4000,
      transactItemsPerMessage: 2,
      recordLatencyMs: 20,
    });

    // Assess: 4000 / (5 × 50) = 16
    expect(result).toMatchObject({
      safeConcurrency: 16,
      binding: 'write_units',
      writeUnitsPerMessage: 5,
      messagesPerSecondPerWorker: 50,
      writeUnitsPerSecondPerWorker: 250,
      maxWriteUnitsPerSecond: 4000,
    });
    expect(result.explanation).toBe(
      'safe worker concurrency 16, bound by write_units (max_write_units_per_second 4000 / (write_units_per_message 5 × messages_per_second_per_worker 50))',
    );
  });

  it('bills each write per started KB and counts every record in flight of an invocation', () => {
    // Act: 2.5 KB items → 3 WCU per write; 3 items → 3 × (1 + 6) = 21 WCU; 4 records at 40 ms → 100 messages/s
    const result = safeDynamoDbConcurrency({
      maxWriteUnitsPerSecond: 40_000,
      transactItemsPerMessage: 3,
      itemSizeKb: 2.5,
      recordLatencyMs: 40,
      recordConcurrency: 4,
    });

    // Assess: 40000 / (21 × 100) = 19.04 → 19
    expect(result.writeUnitsPerMessage).toBe(21);
    expect(result.messagesPerSecondPerWorker).toBe(100);
    expect(result.safeConcurrency).toBe(19);
  });

  it('uses the defaults of a new on-demand table when nothing is stated', () => {
    // Act
    const result = safeDynamoDbConcurrency({});

    // Assess: 4000 / (5 × 1000 / 15) = 12
    expect(DYNAMODB_CAPACITY_DEFAULTS).toMatchObject({ maxWriteUnitsPerSecond: 4000, recordLatencyMs: 15 });
    expect(result).toMatchObject({ safeConcurrency: 12, binding: 'write_units', writeUnitsPerMessage: 5 });
  });

  it('names a downstream or contention term when it binds before the write budget', () => {
    // Act
    const downstream = safeDynamoDbConcurrency({
      maxWriteUnitsPerSecond: 40_000,
      downstreamRateLimit: 100,
      callsPerMessage: 10,
    });
    const contention = safeDynamoDbConcurrency({
      maxWriteUnitsPerSecond: 40_000,
      lockContentionSafeParallelism: 8,
    });

    // Assess
    expect(downstream).toMatchObject({ safeConcurrency: 10, binding: 'downstream_rate' });
    expect(downstream.terms.map((t) => t.term)).toEqual(['write_units', 'downstream_rate']);
    expect(contention).toMatchObject({ safeConcurrency: 8, binding: 'lock_contention' });
  });

  it('returns 0 when the budget cannot carry one worker', () => {
    // Act: 1 WCU/s cannot carry 5 WCU × 66.67 messages/s
    const result = safeDynamoDbConcurrency({ maxWriteUnitsPerSecond: 1 });

    // Assess
    expect(result.safeConcurrency).toBe(0);
  });

  it('refuses inputs outside their range, naming the input, its value and the limit', () => {
    expect(() => safeDynamoDbConcurrency({ maxWriteUnitsPerSecond: 0 })).toThrow(
      'Capacity input maxWriteUnitsPerSecond must be a positive number (given 0)',
    );
    expect(() => safeDynamoDbConcurrency({ transactItemsPerMessage: 101 })).toThrow(
      'transactItemsPerMessage must be a whole number from 1 to 100, the TransactWriteItems limit (given 101)',
    );
    expect(() => safeDynamoDbConcurrency({ itemSizeKb: 401 })).toThrow(
      'itemSizeKb must be at most 400, the DynamoDB item size limit (given 401)',
    );
    expect(() => safeDynamoDbConcurrency({ recordConcurrency: 1.5 })).toThrow(
      'recordConcurrency must be a whole number (given 1.5)',
    );
    expect(() => safeDynamoDbConcurrency({ downstreamRateLimit: 10 })).toThrow(
      'downstream_rate_limit and calls_per_message go together',
    );
  });
});
