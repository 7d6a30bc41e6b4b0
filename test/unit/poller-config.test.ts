import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lambda/errors.ts';
import { POLLER_DEFAULTS } from '../../lambda/runtimes/poller/constants.ts';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';

const base = {
  DATABASE_URL: 'postgres://worker@127.0.0.1:5432/cases',
  WORKER_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker',
};

/** The ConfigError message of `env`, or a failure when it loads. */
function problemsOf(env: Record<string, string>): string {
  try {
    loadPollerConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('Function: loadPollerConfig()', () => {
  it('reads the defaults of POLLER_DEFAULTS and the worker settings of loadConfig', () => {
    // Act
    const { poller, worker } = loadPollerConfig({ ...base, DB_POOL_SIZE: '6' });

    // Assess
    expect(poller).toEqual({
      queueUrl: base.WORKER_QUEUE_URL,
      sqsEndpoint: undefined,
      concurrency: 6,
      batchSize: POLLER_DEFAULTS.batchSize,
      waitSeconds: POLLER_DEFAULTS.waitSeconds,
      visibilitySeconds: POLLER_DEFAULTS.visibilitySeconds,
      stopTimeoutSeconds: POLLER_DEFAULTS.stopTimeoutSeconds,
      maxExtensionSeconds: POLLER_DEFAULTS.maxExtensionSeconds,
      batchTimeoutSeconds: POLLER_DEFAULTS.batchTimeoutSeconds,
      probeTimeoutMs: POLLER_DEFAULTS.probeTimeoutMs,
      probeBackoffBaseMs: POLLER_DEFAULTS.probeBackoffBaseMs,
      probeBackoffMaxMs: POLLER_DEFAULTS.probeBackoffMaxMs,
      halfOpenMs: POLLER_DEFAULTS.halfOpenMs,
      adaptiveConcurrency: 'on',
      concurrencyFloor: 1,
    });
    expect(worker.database.poolSize).toBe(6);
    expect(worker.consumer).toBe('case-worker');
  });

  it('takes the SQS endpoint from SQS_ENDPOINT, then AWS_ENDPOINT_URL_SQS, then AWS_ENDPOINT_URL, as the AWS CLI does', () => {
    // Act
    const all = loadPollerConfig({
      ...base,
      SQS_ENDPOINT: 'http://127.0.0.1:1',
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:2',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:3',
    });
    const sdk = loadPollerConfig({
      ...base,
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:2',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:3',
    });
    const general = loadPollerConfig({ ...base, AWS_ENDPOINT_URL: 'http://127.0.0.1:3' });

    // Assess
    expect([all.poller.sqsEndpoint, sdk.poller.sqsEndpoint, general.poller.sqsEndpoint]).toEqual([
      'http://127.0.0.1:1',
      'http://127.0.0.1:2',
      'http://127.0.0.1:3',
    ]);
  });

  it('reports every bad value at once, each naming the variable, the value and the fix, with the worker problems', () => {
    // Act
    const message = problemsOf({
      DATABASE_URL: base.DATABASE_URL,
      DB_POOL_SIZE: '2',
      WORKER_BACKOFF_BASE_SECONDS: 'x',
      POLLER_CONCURRENCY: '3',
      POLLER_BATCH_SIZE: '11',
      POLLER_WAIT_SECONDS: '21',
      POLLER_VISIBILITY_SECONDS: '1',
      POLLER_STOP_TIMEOUT_SECONDS: '0',
      POLLER_MAX_EXTENSION_SECONDS: '50000',
      POLLER_BATCH_TIMEOUT_SECONDS: '0',
      POLLER_PROBE_BACKOFF_BASE_MS: '5000',
      POLLER_PROBE_BACKOFF_MAX_MS: '1000',
      AWS_ENDPOINT_URL_SQS: 'not a url',
    });

    // Assess
    for (const expected of [
      'WORKER_QUEUE_URL is required by the poller',
      'WORKER_BACKOFF_BASE_SECONDS must be a whole number from 1 to 42300 (given "x")',
      'POLLER_CONCURRENCY must be a whole number from 1 to 2 (given "3"); records in flight need a database connection each: raise DB_POOL_SIZE (2)',
      'POLLER_BATCH_SIZE must be a whole number from 1 to 10 (given "11")',
      'POLLER_WAIT_SECONDS must be a whole number from 0 to 20 (given "21")',
      'POLLER_VISIBILITY_SECONDS must be a whole number from 2 to 43200 (given "1")',
      'POLLER_STOP_TIMEOUT_SECONDS must be a whole number from 1 to 3600 (given "0")',
      'POLLER_MAX_EXTENSION_SECONDS must be a whole number from 1 to 43140 (given "50000")',
      'POLLER_BATCH_TIMEOUT_SECONDS must be a whole number from 1 to 43140 (given "0"); it is each batch\'s budget',
      'POLLER_PROBE_BACKOFF_BASE_MS (5000) must not exceed POLLER_PROBE_BACKOFF_MAX_MS (1000)',
      'AWS_ENDPOINT_URL_SQS must be an absolute URL such as http://127.0.0.1:4566 (given "not a url")',
    ]) {
      expect(message).toContain(expected);
    }
  });

  it('refuses a WORKER_QUEUE_URL that is not a queue URL, and accepts an emulator URL', () => {
    // Act
    const message = problemsOf({ ...base, WORKER_QUEUE_URL: 'case-worker' });
    const local = loadPollerConfig({
      ...base,
      WORKER_QUEUE_URL: 'http://sqs.us-east-1.127.0.0.1:4566/000000000000/q',
    });

    // Assess
    expect(message).toContain(
      'WORKER_QUEUE_URL must be a queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker (given "case-worker")',
    );
    expect(local.poller.queueUrl).toBe('http://sqs.us-east-1.127.0.0.1:4566/000000000000/q');
  });
});

describe('Function: loadPollerConfig() — commit mode and store', () => {
  it('runs a per-batch poller with record concurrency 1 and DB_POOL_SIZE whole batches in flight by default', () => {
    // Act
    const { worker, poller } = loadPollerConfig({
      ...base,
      DB_POOL_SIZE: '8',
      WORKER_COMMIT_MODE: 'per-batch',
    });
    const smaller = loadPollerConfig({
      ...base,
      DB_POOL_SIZE: '8',
      WORKER_COMMIT_MODE: 'per-batch',
      POLLER_BATCH_SIZE: '5',
    });

    // Assess: a batch's records one after another in its transaction, one connection per batch
    expect(worker.recordConcurrency).toBe(1);
    expect(poller.concurrency).toBe(80);
    expect(smaller.poller.concurrency).toBe(40);
  });

  it('names the variables, not the engine options, when a per-batch poller is given more', () => {
    // Act
    const message = problemsOf({
      ...base,
      DB_POOL_SIZE: '8',
      WORKER_COMMIT_MODE: 'per-batch',
      WORKER_RECORD_CONCURRENCY: '4',
      POLLER_CONCURRENCY: '81',
    });

    // Assess
    expect(message).toContain(
      'WORKER_RECORD_CONCURRENCY must be 1 with WORKER_COMMIT_MODE=per-batch (given "4"): a batch\'s records run one after another in its one transaction; unset WORKER_RECORD_CONCURRENCY',
    );
    expect(message).toContain(
      'POLLER_CONCURRENCY must be a whole number from 1 to 80 (given "81"); with WORKER_COMMIT_MODE=per-batch each batch in flight holds one database connection: at most DB_POOL_SIZE (8) batches of POLLER_BATCH_SIZE (10) records',
    );
    expect(message).not.toContain('recordConcurrency');
  });

  it('reads WORKER_STORE=dynamodb without a database: POLLER_CONCURRENCY defaults to the DynamoDB store’s 10, whatever DB_POOL_SIZE says', () => {
    // Act
    const { worker, poller } = loadPollerConfig({
      WORKER_QUEUE_URL: base.WORKER_QUEUE_URL,
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: 'worker-table',
      DB_POOL_SIZE: '2',
    });

    // Assess
    expect(worker.store).toMatchObject({ kind: 'dynamodb', tableName: 'worker-table' });
    expect(worker.database.kind).toBe('none');
    expect(worker.recordConcurrency).toBe(10);
    expect(poller.concurrency).toBe(10);
  });

  it('refuses POLLER_CONCURRENCY above 10 and WORKER_COMMIT_MODE=per-batch with WORKER_STORE=dynamodb, each naming the store', () => {
    // Act
    const message = problemsOf({
      WORKER_QUEUE_URL: base.WORKER_QUEUE_URL,
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: 'worker-table',
      DB_POOL_SIZE: '40',
      WORKER_COMMIT_MODE: 'per-batch',
      POLLER_CONCURRENCY: '11',
    });

    // Assess: DB_POOL_SIZE raises nothing; the per-batch bound (pool × batch) does not apply either
    expect(message).toContain(
      'POLLER_CONCURRENCY must be a whole number from 1 to 10 (given "11"); with WORKER_STORE=dynamodb the poller runs at most 10 records at once, the DynamoDB store\'s limit (DB_POOL_SIZE is not read); lower POLLER_CONCURRENCY',
    );
    expect(message).toContain('WORKER_COMMIT_MODE=per-batch is a PostgreSQL mode');
  });
});

describe('Function: loadPollerConfig() — adaptive concurrency', () => {
  it('reads POLLER_ADAPTIVE_CONCURRENCY (on by default, off) and POLLER_CONCURRENCY_FLOOR (1 by default, up to POLLER_CONCURRENCY)', () => {
    // Act
    const defaults = loadPollerConfig({ ...base, DB_POOL_SIZE: '8' });
    const off = loadPollerConfig({ ...base, DB_POOL_SIZE: '8', POLLER_ADAPTIVE_CONCURRENCY: 'off' });
    const floor = loadPollerConfig({
      ...base,
      DB_POOL_SIZE: '8',
      POLLER_CONCURRENCY: '6',
      POLLER_ADAPTIVE_CONCURRENCY: 'on',
      POLLER_CONCURRENCY_FLOOR: '6',
    });

    // Assess
    expect(defaults.poller).toMatchObject({ concurrency: 8, adaptiveConcurrency: 'on', concurrencyFloor: 1 });
    expect(off.poller).toMatchObject({ concurrency: 8, adaptiveConcurrency: 'off', concurrencyFloor: 1 });
    expect(floor.poller).toMatchObject({ concurrency: 6, adaptiveConcurrency: 'on', concurrencyFloor: 6 });
  });

  it.each([
    ['TRUE', '2'],
    ['yes', '0'],
    ['On', '9'],
    ['off ', '1.5'],
  ])(
    'refuses POLLER_ADAPTIVE_CONCURRENCY=%j and POLLER_CONCURRENCY_FLOOR=%j, naming each variable, its value and the fix',
    (mode, floor) => {
      // Act
      const message = problemsOf({
        ...base,
        DB_POOL_SIZE: '8',
        POLLER_CONCURRENCY: '8',
        POLLER_ADAPTIVE_CONCURRENCY: mode,
        POLLER_CONCURRENCY_FLOOR: floor,
      });

      // Assess
      expect(message).toContain(
        `POLLER_ADAPTIVE_CONCURRENCY must be on or off (given "${mode}"); on lowers the records in flight`,
      );
      if (floor !== '2') {
        expect(message).toContain(
          `POLLER_CONCURRENCY_FLOOR must be a whole number from 1 to 8 (given "${floor}"); it is the lowest the adaptive limit goes, and POLLER_CONCURRENCY (8) is its ceiling`,
        );
      } else {
        expect(message).not.toContain('POLLER_CONCURRENCY_FLOOR');
      }
    },
  );

  it('bounds the floor by the POLLER_CONCURRENCY given, not the pool: a floor above the ceiling is refused', () => {
    // Act
    const message = problemsOf({
      ...base,
      DB_POOL_SIZE: '8',
      POLLER_CONCURRENCY: '3',
      POLLER_CONCURRENCY_FLOOR: '4',
    });

    // Assess
    expect(message).toContain(
      'POLLER_CONCURRENCY_FLOOR must be a whole number from 1 to 3 (given "4"); it is the lowest the adaptive limit goes, and POLLER_CONCURRENCY (3) is its ceiling; lower the floor or raise POLLER_CONCURRENCY',
    );
    expect(message).not.toContain('POLLER_CONCURRENCY must');
  });
});
