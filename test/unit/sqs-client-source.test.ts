import { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { sqsClientResolver } from '../../lambda/sqs/sqs-client-source.ts';
import { captureOutput } from '../support/capture-output.ts';

const logger = new Logger({ serviceName: 'sqs-client-source-test', logLevel: 'WARN' });

describe('Function: sqsClientResolver', () => {
  it('gives a client as it is, and no client when there is none', async () => {
    const client = new SQSClient({ region: 'us-east-1' });

    expect(await sqsClientResolver(client, logger)()).toBe(client);
    expect(await sqsClientResolver(undefined, logger)()).toBeUndefined();
  });

  it('makes the client of a function source once, on the first call', async () => {
    // Prepare
    let made = 0;
    const resolve = sqsClientResolver(async () => {
      made += 1;
      return new SQSClient({ region: 'us-east-1' });
    }, logger);

    // Act
    const before = made;
    const [first, second] = await Promise.all([resolve(), resolve()]);
    const third = await resolve();

    // Assess
    expect(before).toBe(0);
    expect(made).toBe(1);
    expect(first).toBeInstanceOf(SQSClient);
    expect(second).toBe(first);
    expect(third).toBe(first);
  });

  it('logs a source that fails and resolves to no client; the next call tries again', async () => {
    // Prepare
    let attempts = 0;
    const resolve = sqsClientResolver(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('Cannot find module @aws-sdk/client-sqs');
      return new SQSClient({ region: 'us-east-1' });
    }, logger);

    // Act
    const failed = await captureOutput(() => resolve());
    const retried = await resolve();

    // Assess
    expect(failed.result).toBeUndefined();
    expect(failed.lines).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: 'worker_sqs_client_unavailable',
        error: 'Error: Cannot find module @aws-sdk/client-sqs',
      }),
    ]);
    expect(retried).toBeInstanceOf(SQSClient);
    expect(attempts).toBe(2);
  });
});
