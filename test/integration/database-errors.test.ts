import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createSql } from '../../lambda/postgres/db.ts';
import { describeDatabaseError } from '../../lambda/postgres/describe-database-error.ts';
import { classifyPostgresError } from '../../lambda/stores/postgres/classify-postgres-error.ts';
import { startBrokenListener } from '../support/broken-listener.ts';
import { withDatabase } from '../support/global-setup.ts';

/** An empty database (not cloned from the migrated template), dropped after the file. */
async function emptyDatabase(): Promise<string> {
  const admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
  const name = `empty_${randomBytes(6).toString('hex')}`;
  await admin.unsafe(`create database ${name}`);
  afterAll(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return withDatabase(inject('adminDatabaseUrl'), name);
}

describe('Function: classifyPostgresError() — errors of a real database', () => {
  it('names the missing table and the migrations to apply for 42P01 (a migration not applied)', async () => {
    // Prepare
    const url = await emptyDatabase();
    const sql = createSql({ kind: 'url', url, poolSize: 1 });
    const error = await sql`select status from worker_inbox where consumer = ${'case-worker'}`.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await sql.end({ timeout: 1 });

    // Act
    const failure = classifyPostgresError(error);
    const described = describeDatabaseError(error, { setting: 'DATABASE_URL', address: '127.0.0.1:5432' });

    // Assess
    expect(failure).toEqual({
      retryable: true,
      code: 'POSTGRES_42P01',
      message:
        'PostgreSQL 42P01: table worker_inbox does not exist; apply the migrations (npm run migrate, or the migration function on deploy)',
      connection: false,
    });
    expect(described).toEqual({
      message:
        'Table worker_inbox does not exist in the database of DATABASE_URL (127.0.0.1:5432): its migration is not applied. Run npm run migrate with DATABASE_URL set to that database.',
      configuration: false,
    });
  });

  it('keeps the setting and host:port of a connection that never opened, as a connection-class failure', async () => {
    // Prepare
    const listener = await startBrokenListener('close');
    const sql = createSql({ kind: 'url', url: listener.url, poolSize: 1 });
    const error = await sql`select 1`.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await sql.end({ timeout: 0 });

    // Act
    const failure = classifyPostgresError(error);

    // Assess: the rest of the batch is reported without touching the database.
    expect(failure).toMatchObject({ retryable: true, code: 'DATABASE_UNAVAILABLE', connection: true });
    expect(failure.message).toContain(
      `Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): 8 connection attempts in a row`,
    );
  });
});
