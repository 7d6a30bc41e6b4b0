import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { SECRET_PASSWORD, startBrokenListener } from '../support/broken-listener.ts';
import { withDatabase } from '../support/global-setup.ts';
import { runEntry } from '../support/run-entry.ts';

const CLI = 'bin/sqs-worker.js';

describe('CLI: sqs-worker — the database URL', () => {
  it('exits 2 naming the flag and the value, password masked, for a URL that is not PostgreSQL', async () => {
    // Act
    const result = await runEntry(CLI, [
      'inbox',
      'stats',
      '--json',
      '--database-url',
      `mysql://root:${SECRET_PASSWORD}@db.internal:3306/cases`,
    ]);

    // Assess
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        type: 'UsageError',
        message:
          '--database-url must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "mysql://root:***@db.internal:3306/cases"): the scheme must be postgres:// or postgresql://, not mysql://',
        exitCode: 2,
      },
    });
    expect(result.stdout + result.stderr).not.toContain(SECRET_PASSWORD);
  });

  it('exits 2 naming DATABASE_URL for an unparsable value (postgres.js threw TypeError: Invalid URL)', async () => {
    // Act
    const result = await runEntry(CLI, ['inbox', 'stats'], {
      DATABASE_URL: `postgres://worker:${SECRET_PASSWORD}@db.internal:5432`,
    });

    // Assess
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'sqs-worker inbox stats: DATABASE_URL must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "postgres://worker:***@db.internal:5432"): the database name is missing',
    );
    expect(result.stderr).not.toContain('TypeError');
    expect(result.stderr).not.toContain(SECRET_PASSWORD);
  });

  it('fails within the 10 s connect timeout when DATABASE_URL points at a listener that never answers', async () => {
    // Prepare
    const listener = await startBrokenListener('silent');

    // Act
    const result = await runEntry(CLI, ['inbox', 'stats'], { DATABASE_URL: listener.url });

    // Assess: exit 1 (the operation failed) with one line naming the variable and host:port, not the password.
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `sqs-worker inbox stats: Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): no answer within 10 s (connect timeout). Check that DATABASE_URL names a PostgreSQL server that is running and reachable from here.`,
    );
    expect(result.elapsedMs).toBeLessThan(20_000);
    // Two pool connections at most.
    expect(listener.connections).toBeGreaterThanOrEqual(1);
    expect(listener.connections).toBeLessThanOrEqual(2);
  });

  it('gives up after a bounded number of attempts when --database-url points at a listener that closes at once', async () => {
    // Prepare
    const listener = await startBrokenListener('close');

    // Act
    const result = await runEntry(CLI, ['inbox', 'stats', '--database-url', listener.url]);

    // Assess: postgres.js alone opened ~38,000 connections a minute to such a listener, for ever.
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `sqs-worker inbox stats: Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (--database-url): 8 connection attempts in a row were closed or refused`,
    );
    expect(result.stderr).not.toContain(SECRET_PASSWORD);
    expect(result.elapsedMs).toBeLessThan(20_000);
    // 8 attempts in a row per pool connection (2) at most; measured: 8.
    expect(listener.connections).toBeLessThanOrEqual(16);
  });

  it('exits 2 telling to fix the setting when the server rejects the password or has no such database', async () => {
    // Prepare
    const wrongPassword = new URL(inject('adminDatabaseUrl'));
    wrongPassword.password = SECRET_PASSWORD;
    const noDatabase = withDatabase(inject('adminDatabaseUrl'), 'no_such_database');

    // Act
    const login = await runEntry(CLI, ['inbox', 'stats'], { DATABASE_URL: wrongPassword.toString() });
    const database = await runEntry(CLI, ['inbox', 'stats', '--database-url', noDatabase]);

    // Assess
    expect(login.code).toBe(2);
    expect(login.stderr).toMatch(
      /^sqs-worker inbox stats: PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\) rejected the login: password authentication failed for user "postgres"\. Fix the user or password in DATABASE_URL\.$/m,
    );
    expect(login.stderr).not.toContain(SECRET_PASSWORD);
    expect(database.code).toBe(2);
    expect(database.stderr).toContain(
      'database "no_such_database" does not exist. Fix the database name in --database-url, or create the database.',
    );
  });

  it('says which table is missing and that npm run migrate creates it, on a database without migrations', async () => {
    // Prepare: an empty database (not cloned from the migrated template).
    const admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    const name = `empty_${randomBytes(6).toString('hex')}`;
    await admin.unsafe(`create database ${name}`);
    afterAll(async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    });
    const url = withDatabase(inject('adminDatabaseUrl'), name);

    // Act
    const result = await runEntry(CLI, ['inbox', 'stats', '--database-url', url]);

    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'Table worker_inbox does not exist in the database of --database-url (127.0.0.1:',
    );
    expect(result.stderr).toContain(
      'its migration is not applied. Run npm run migrate with DATABASE_URL set to that database.',
    );
  });
});
