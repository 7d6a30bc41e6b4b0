import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { ConfigError } from '../../lambda/errors.ts';

/** The ConfigError `loadConfig(env)` throws (the test fails when it throws nothing or something else). */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (caught) {
    if (caught instanceof ConfigError) return caught;
    throw caught;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('Function: loadConfig()', () => {
  it('uses DATABASE_URL locally and documented defaults', () => {
    // Act
    const config = loadConfig({ DATABASE_URL: 'postgres://localhost/db' });

    // Assess
    expect(config).toMatchObject({
      database: { kind: 'url', url: 'postgres://localhost/db', poolSize: 1 },
      consumer: 'case-worker',
      recordConcurrency: 1,
      terminalPolicy: 'quarantine',
      commitMode: 'per-message',
      backoffBaseSeconds: 2,
      backoffMaxSeconds: 900,
      failInvocationOnFullBatchFailure: true,
    });
  });

  it('reads the payloadRef settings: PAYLOAD_MAX_BYTES (64 MiB by default) and S3_ENDPOINT', () => {
    // Act
    const defaults = loadConfig({ DATABASE_URL: 'postgres://localhost/db' });
    const local = loadConfig({
      DATABASE_URL: 'postgres://localhost/db',
      PAYLOAD_MAX_BYTES: '1048576',
      S3_ENDPOINT: 'http://127.0.0.1:4566',
    });

    // Assess
    expect(defaults).toMatchObject({ maxPayloadBytes: 67_108_864, s3Endpoint: undefined });
    expect(local).toMatchObject({ maxPayloadBytes: 1_048_576, s3Endpoint: 'http://127.0.0.1:4566' });
    expect(
      configError({ DATABASE_URL: 'postgres://localhost/db', PAYLOAD_MAX_BYTES: '64MiB' }).message,
    ).toContain('PAYLOAD_MAX_BYTES must be a whole number from 1 to 1073741824 (given "64MiB")');
  });

  it('reads the breaker settings with their defaults, and names a bad one', () => {
    // Act
    const defaults = loadConfig({ DATABASE_URL: 'postgres://localhost/db' }).breaker;
    const provisioned = loadConfig({
      DATABASE_URL: 'postgres://localhost/db',
      BREAKER_MAPPING_UUID: 'uuid-1',
      BREAKER_SCALING_MODE: 'provisioned',
      BREAKER_MINIMUM_POLLERS: '3',
      BREAKER_MAXIMUM_POLLERS: '8',
    }).breaker;
    const bad = configError({
      DATABASE_URL: 'postgres://localhost/db',
      BREAKER_SCALING_MODE: 'on-demand',
      BREAKER_PROBE_BACKOFF_BASE_MS: '600000',
    });

    // Assess
    expect(defaults).toEqual({
      mappingUuid: undefined,
      scalingMode: 'maximum-concurrency',
      maxConcurrency: 2,
      minimumPollers: 2,
      maximumPollers: 2,
      halfOpenConcurrency: 2,
      failureThreshold: 2,
      checkIntervalMs: 10_000,
      probeTimeoutMs: 5000,
      minOpenMs: 60_000,
      probeBackoffBaseMs: 15_000,
      probeBackoffMaxMs: 300_000,
      halfOpenMs: 60_000,
      runGuardMs: 5000,
      concurrency: {
        enabled: false,
        floor: 2,
        windowSeconds: 60,
        namespace: 'SqsInboxWorker',
        service: 'sqs-inbox-worker',
      },
    });
    expect(provisioned).toMatchObject({
      mappingUuid: 'uuid-1',
      scalingMode: 'provisioned',
      minimumPollers: 3,
      maximumPollers: 8,
    });
    expect(bad.message).toBe(
      'Invalid worker configuration:\n- BREAKER_SCALING_MODE must be one of maximum-concurrency, provisioned (given "on-demand")\n- BREAKER_PROBE_BACKOFF_BASE_MS (600000) must not exceed BREAKER_PROBE_BACKOFF_MAX_MS (300000); lower the base or raise the maximum',
    );
  });

  it('reads the control loop of the mapping’s MaximumConcurrency, and names every bad setting of it', () => {
    // Act
    const set = loadConfig({
      DATABASE_URL: 'postgres://localhost/db',
      BREAKER_MAX_CONCURRENCY: '40',
      CONCURRENCY_ADAPTIVE: 'true',
      CONCURRENCY_FLOOR: '5',
      CONCURRENCY_WINDOW_SECONDS: '180',
      POWERTOOLS_METRICS_NAMESPACE: 'Payments',
      POWERTOOLS_SERVICE_NAME: 'breaker-service',
      CONCURRENCY_METRICS_SERVICE: 'payments-worker',
    }).breaker.concurrency;
    const bad = configError({
      DATABASE_URL: 'postgres://localhost/db',
      CONCURRENCY_FLOOR: '1',
      CONCURRENCY_WINDOW_SECONDS: '90',
    });
    const aboveCeiling = configError({
      DATABASE_URL: 'postgres://localhost/db',
      BREAKER_MAX_CONCURRENCY: '4',
      CONCURRENCY_ADAPTIVE: 'true',
      CONCURRENCY_FLOOR: '8',
    });

    // Assess
    expect(set).toEqual({
      enabled: true,
      floor: 5,
      windowSeconds: 180,
      namespace: 'Payments',
      service: 'payments-worker',
    });
    expect(bad.message).toBe(
      'Invalid worker configuration:\n- CONCURRENCY_FLOOR must be a whole number from 2 to 1000 (given "1"): AWS\'s range of MaximumConcurrency\n- CONCURRENCY_WINDOW_SECONDS must be 60, 120, 180, 240 or 300 (given "90"): whole minutes, the resolution of the worker\'s metrics',
    );
    expect(aboveCeiling.message).toContain(
      'CONCURRENCY_FLOOR (8) must not exceed BREAKER_MAX_CONCURRENCY (4)',
    );
  });

  it('reads the deployed host settings with IAM auth', () => {
    const config = loadConfig({
      DB_HOST: 'proxy.example',
      DB_NAME: 'app',
      DB_USER: 'worker',
      AWS_REGION: 'eu-west-1',
      DB_POOL_SIZE: '2',
    });
    expect(config.database).toMatchObject({
      kind: 'host',
      host: 'proxy.example',
      port: 5432,
      auth: 'iam',
      ssl: true,
      poolSize: 2,
    });
    expect(config.recordConcurrency).toBe(2);
  });

  it('reports every problem at once, naming the variable, the value and the fix', () => {
    // Act
    const { message } = configError({
      DB_HOST: 'h',
      DB_POOL_SIZE: '2',
      WORKER_RECORD_CONCURRENCY: '3',
      WORKER_TERMINAL_POLICY: 'drop',
    });

    // Assess
    expect(message).toContain('WORKER_TERMINAL_POLICY must be one of quarantine, dlq (given "drop")');
    expect(message).toContain(
      'WORKER_RECORD_CONCURRENCY must be a whole number from 1 to DB_POOL_SIZE (2) (given "3")',
    );
    expect(message).toContain('missing: DB_NAME, DB_USER, AWS_REGION');
  });

  it('checks the rest with an invalid variable at its default, and reports the whole list once', () => {
    // Act
    const { message } = configError({
      DATABASE_URL: 'postgres://x/y',
      DB_POOL_SIZE: 'two',
      WORKER_RECORD_CONCURRENCY: '2',
      WORKER_BACKOFF_BASE_SECONDS: '0',
      WORKER_DEADLINE_GUARD_MS: '-1',
    });

    // Assess
    expect(message).toBe(
      [
        'Invalid worker configuration:',
        '- DB_POOL_SIZE must be a whole number from 1 to 100 (given "two")',
        '- WORKER_BACKOFF_BASE_SECONDS must be a whole number from 1 to 42300 (given "0")',
        '- WORKER_RECORD_CONCURRENCY must be a whole number from 1 to DB_POOL_SIZE (1) (given "2"); raise DB_POOL_SIZE or lower the concurrency',
        '- WORKER_DEADLINE_GUARD_MS must be a whole number of milliseconds ≥ 0 (given "-1")',
      ].join('\n'),
    );
  });

  it('names the value and the fix for the consumer and the notification URL', () => {
    // Act
    const { message } = configError({
      DATABASE_URL: 'postgres://x/y',
      WORKER_CONSUMER: 'c'.repeat(101),
      NOTIFICATION_URL: 'notify-me',
    });

    // Assess
    expect(message).toContain('WORKER_CONSUMER must be 1–100 characters (given 101)');
    expect(message).toContain(
      'NOTIFICATION_URL must be an absolute URL such as https://notify.example.com/v1/notifications (given "notify-me")',
    );
  });
});

describe('Function: loadConfig() — retired timeout variables', () => {
  it('refuses the worker timeouts of earlier versions, saying where each setting lives now', () => {
    // Act
    const error = configError({
      DATABASE_URL: 'postgres://localhost/db',
      WORKER_CLAIM_LOCK_TIMEOUT_MS: '1000',
      WORKER_LOCK_TIMEOUT_MS: '200',
      WORKER_STATEMENT_TIMEOUT_MS: '9000',
    });

    // Assess
    expect(error.message).toContain(
      'WORKER_CLAIM_LOCK_TIMEOUT_MS is no longer read (given "1000"): a delivery of a key in flight elsewhere is now retried at once (IN_PROGRESS_ELSEWHERE), without a wait; remove it from the worker',
    );
    expect(error.message).toContain(
      'WORKER_LOCK_TIMEOUT_MS is no longer read (given "200"): the lock timeout is the worker role\'s default, set by the migration function from DB_LOCK_TIMEOUT_MS; remove it from the worker',
    );
    expect(error.message).toContain('WORKER_STATEMENT_TIMEOUT_MS is no longer read (given "9000")');
  });
});

describe('Function: loadConfig() — DATABASE_URL', () => {
  it.each([
    [
      'mysql://root:hunter2@db.internal:3306/app',
      'the scheme must be postgres:// or postgresql://, not mysql://',
      'mysql://root:***@db.internal:3306/app',
    ],
    [
      'postgres://worker:hunter2@:5432/app',
      'it is not a valid URL (a password with @, /, : or # must be percent-encoded)',
      'postgres://worker:***@:5432/app',
    ],
    [
      'postgres://worker:hunter2@db.internal:5432',
      'the database name is missing',
      'postgres://worker:***@db.internal:5432',
    ],
    [
      'postgres://worker:hunter2@db.internal:99999/app',
      'it is not a valid URL',
      'postgres://worker:***@db.internal:99999/app',
    ],
    ['db.internal:5432/app', 'it does not start with postgres://', 'db.internal:5432/app'],
    [
      'postgres://worker:pa@ss/word@db.internal/app',
      'the path must be one database name (a password with @, /, : or # must be percent-encoded)',
      'postgres://worker:***@db.internal/app',
    ],
  ])('rejects %s, naming the variable and the value with its password masked', (url, problem, shown) => {
    // Act
    const { message } = configError({ DATABASE_URL: url });

    // Assess: one problem (not also "set DB_HOST"), the masked value, never the password.
    expect(message).toContain(
      `- DATABASE_URL must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "${shown}"): ${problem}`,
    );
    expect(message.split('\n')).toHaveLength(2);
    expect(message).not.toMatch(/hunter2|ss\/word/);
  });

  it('accepts postgresql://, percent-encoded passwords and several hosts as postgres.js does', () => {
    for (const url of [
      'postgresql://worker:p%40ss@db.internal/app?sslmode=require',
      'postgres://worker@db1.internal:5432,db2.internal:5433/app',
    ]) {
      expect(loadConfig({ DATABASE_URL: url }).database).toMatchObject({ kind: 'url', url });
    }
  });
});

describe('Function: loadConfig() — DB_PREPARE', () => {
  const host = {
    DB_HOST: 'cases.cluster-abc123.eu-west-1.rds.amazonaws.com',
    DB_NAME: 'cases',
    DB_USER: 'sqs_worker',
    AWS_REGION: 'eu-west-1',
  };

  it('is off by default and turns named prepared statements on for a direct connection', () => {
    // Act
    const defaults = loadConfig({ ...host });
    const direct = loadConfig({ ...host, DB_PREPARE: 'true' });
    const local = loadConfig({ DATABASE_URL: 'postgres://localhost/db', DB_PREPARE: 'true' });

    // Assess
    expect(defaults.database.prepare).toBe(false);
    expect(direct.database).toMatchObject({ kind: 'host', prepare: true });
    expect(local.database).toMatchObject({ kind: 'url', prepare: true });
  });

  it('refuses it for an RDS Proxy endpoint, naming the host and the fix', () => {
    // Act
    const viaHost = configError({
      ...host,
      DB_HOST: 'cases-proxy.proxy-abc123def456.eu-west-1.rds.amazonaws.com',
      DB_PREPARE: 'true',
    });
    const viaUrl = configError({
      DATABASE_URL: 'postgres://worker@cases-proxy.proxy-abc123def456.cn-north-1.rds.amazonaws.com.cn/cases',
      DB_PREPARE: 'true',
    });

    // Assess
    expect(viaHost.message).toContain(
      'DB_PREPARE=true is for direct connections only, and cases-proxy.proxy-abc123def456.eu-west-1.rds.amazonaws.com is an RDS Proxy endpoint',
    );
    expect(viaHost.message).toContain('Unset DB_PREPARE (or set it to false)');
    expect(viaUrl.message).toContain(
      'cases-proxy.proxy-abc123def456.cn-north-1.rds.amazonaws.com.cn is an RDS Proxy endpoint',
    );
    // Without DB_PREPARE the same proxy endpoint is the normal, deployed case.
    expect(
      loadConfig({ ...host, DB_HOST: 'cases-proxy.proxy-abc123def456.eu-west-1.rds.amazonaws.com' }).database
        .prepare,
    ).toBe(false);
  });

  it('names a value that is not true or false', () => {
    expect(configError({ ...host, DB_PREPARE: 'yes' }).message).toContain(
      'DB_PREPARE must be one of true, false (given "yes")',
    );
  });
});

describe('Function: loadConfig() — WORKER_COMMIT_MODE=per-batch', () => {
  it('runs a batch one record after another whatever the pool size, and names the variables when told otherwise', () => {
    // Act
    const config = loadConfig({
      DATABASE_URL: 'postgres://localhost/db',
      DB_POOL_SIZE: '4',
      WORKER_COMMIT_MODE: 'per-batch',
    });
    const error = configError({
      DATABASE_URL: 'postgres://localhost/db',
      DB_POOL_SIZE: '4',
      WORKER_COMMIT_MODE: 'per-batch',
      WORKER_RECORD_CONCURRENCY: '4',
    });

    // Assess
    expect(config.recordConcurrency).toBe(1);
    expect(error.message).toContain(
      'WORKER_RECORD_CONCURRENCY must be 1 with WORKER_COMMIT_MODE=per-batch (given "4")',
    );
  });
});
