import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lambda/errors.ts';
import { type PollerOptions, startPoller } from '../../lambda/runtimes/poller/start-poller.ts';

/** Options valid but for `overrides`; the SQS client is never called (the options are checked first). */
const options = (overrides: Partial<PollerOptions>): PollerOptions => ({
  sqs: new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:1' }),
  queueUrl: 'http://127.0.0.1:1/000000000000/q',
  processBatch: async () => ({ outcomes: [], databaseDown: false }),
  concurrency: 4,
  probe: async () => {},
  logger: { info: () => {}, warn: () => {}, error: () => {} } as never,
  metrics: { addMetric: () => {}, publishStoredMetrics: () => {} },
  ...overrides,
});

describe('Function: startPoller() — adaptive concurrency options', () => {
  it('refuses a floor above the concurrency (its ceiling) or below 1, and a window that is not a whole positive number, naming each', async () => {
    // Act
    const error = await startPoller(options({ adaptiveConcurrency: { floor: 5, windowMs: 0.5 } })).catch(
      (caught: unknown) => caught,
    );
    const zero = await startPoller(options({ adaptiveConcurrency: { floor: 0 } })).catch(
      (caught: unknown) => caught,
    );

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(
      'adaptiveConcurrency.floor must be a whole number from 1 to 4 (given 5)',
    );
    expect((error as Error).message).toContain(
      'adaptiveConcurrency.windowMs must be a whole number from 1 to 3600000 (given 0.5)',
    );
    expect((zero as Error).message).toContain(
      'adaptiveConcurrency.floor must be a whole number from 1 to 4 (given 0)',
    );
  });
});
