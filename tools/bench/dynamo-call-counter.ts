import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Capacity units DynamoDB reported, summed over the calls counted. */
export interface ConsumedUnits {
  readonly write: number;
  readonly read: number;
}

/** What {@link countDynamoCalls} has seen since the last {@link DynamoCallCounter.reset}. */
export interface DynamoCallCounts {
  /** Calls per operation name (`PutItem`, `TransactWriteItems`, …), failed ones included. */
  readonly calls: Readonly<Record<string, number>>;
  /** Calls that failed (a failed condition, a cancelled transaction), per operation name. */
  readonly failed: Readonly<Record<string, number>>;
  /** Capacity the successful calls report (`ConsumedCapacity`, `ReturnConsumedCapacity: 'TOTAL'`). */
  readonly units: ConsumedUnits;
  /** Items written by single-item writes (PutItem, UpdateItem, DeleteItem), failed ones included. */
  readonly itemWrites: number;
  /** Items in the TransactWriteItems calls (each billed as two writes by the service), failed ones included. */
  readonly transactItems: number;
}

/** The counter {@link countDynamoCalls} adds to a client. */
export interface DynamoCallCounter {
  counts(): DynamoCallCounts;
  reset(): void;
}

type Capacity = { CapacityUnits?: number; WriteCapacityUnits?: number; ReadCapacityUnits?: number };

/**
 * Adds a middleware to `client` (and so to every document client made from it, which shares its stack) that counts
 * each call by operation name and asks every command for `ReturnConsumedCapacity: 'TOTAL'`, summing the write and
 * read units the responses report. A call that fails (a failed condition, a cancelled transaction) is counted, but
 * DynamoDB's error carries no capacity: its units are not in the sums. Both sides of the bench get the same
 * middleware, so they are counted the same way.
 */
export function countDynamoCalls(client: DynamoDBClient): DynamoCallCounter {
  let calls: Record<string, number> = {};
  let failed: Record<string, number> = {};
  let write = 0;
  let read = 0;
  let itemWrites = 0;
  let transactItems = 0;
  const add = (capacity: Capacity | undefined, operation: string) => {
    if (!capacity) return;
    const units = capacity.CapacityUnits ?? 0;
    const writeUnits = capacity.WriteCapacityUnits;
    const readUnits = capacity.ReadCapacityUnits;
    if (writeUnits !== undefined || readUnits !== undefined) {
      write += writeUnits ?? 0;
      read += readUnits ?? 0;
    } else if (/^(Get|BatchGet|Query|Scan|TransactGet)/.test(operation)) read += units;
    else write += units;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName ?? 'unknown').replace(/Command$/, '');
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      calls[operation] = (calls[operation] ?? 0) + 1;
      if (/^(Put|Update|Delete)Item$/.test(operation)) itemWrites += 1;
      if (Array.isArray(input.TransactItems) && operation === 'TransactWriteItems')
        transactItems += input.TransactItems.length;
      try {
        const result = await next(args);
        const consumed = (result.output as { ConsumedCapacity?: Capacity | Capacity[] }).ConsumedCapacity;
        for (const capacity of Array.isArray(consumed) ? consumed : [consumed]) add(capacity, operation);
        return result;
      } catch (error) {
        failed[operation] = (failed[operation] ?? 0) + 1;
        throw error;
      }
    },
    { step: 'initialize', name: 'benchCountDynamoCalls', priority: 'high' },
  );
  return {
    counts: () => ({
      calls: { ...calls },
      failed: { ...failed },
      units: { write, read },
      itemWrites,
      transactItems,
    }),
    reset() {
      itemWrites = 0;
      transactItems = 0;
      calls = {};
      failed = {};
      write = 0;
      read = 0;
    },
  };
}
