import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { ConfigError } from '../../lambda/errors.ts';
import { createSql } from '../../lambda/postgres/db.ts';

describe('Function: loadConfig() with WORKER_STORE=dynamodb', () => {
  it('needs no database variables and reads the DynamoDB settings', () => {
    // Act
    const config = loadConfig({
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: 'sqs-worker',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
      RETENTION_SOURCE_SECONDS: '345600',
      RETENTION_DLQ_SECONDS: '1209600',
    });

    // Assess
    expect(config.store).toEqual({
      kind: 'dynamodb',
      tableName: 'sqs-worker',
      endpoint: 'http://127.0.0.1:8000',
      leaseMarginSeconds: 30,
      retention: { sourceRetentionSeconds: 345_600, dlqRetentionSeconds: 1_209_600 },
    });
    expect(config.database.kind).toBe('none');
    expect(config.recordConcurrency).toBe(10);
    expect(() => createSql(config.database)).toThrow(
      /needs PostgreSQL.*WORKER_STORE=dynamodb.*DATABASE_URL or DB_HOST/,
    );
  });

  it('reports a missing table, a per-batch commit mode and a bad endpoint together', () => {
    // Act
    const load = () =>
      loadConfig({
        WORKER_STORE: 'dynamodb',
        WORKER_COMMIT_MODE: 'per-batch',
        DYNAMODB_ENDPOINT: 'localhost:8000',
      });

    // Assess
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/WORKER_STORE=dynamodb needs DYNAMODB_TABLE/);
    expect(load).toThrow(/WORKER_COMMIT_MODE=per-batch is a PostgreSQL mode/);
    expect(load).toThrow(/DYNAMODB_ENDPOINT must be an http\(s\) URL .*given "localhost:8000"/);
  });

  it('keeps PostgreSQL the default store', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db' });
    expect(config.store).toEqual({ kind: 'postgres' });
    expect(() => loadConfig({ WORKER_STORE: 'mysql', DATABASE_URL: 'postgres://u:p@127.0.0.1/db' })).toThrow(
      /WORKER_STORE/,
    );
  });
});
