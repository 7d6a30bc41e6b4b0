import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, inject } from 'vitest';
import { withDatabase } from './global-setup.ts';

/** A database of one test file, cloned from the migrated template. */
export interface TestDatabase {
  /** Connection URL of the database. */
  readonly url: string;
  /** Name of the database. */
  readonly name: string;
  /** A client (pool of 4) for assertions and setup. */
  readonly sql: postgres.Sql;
  /** Opens another client on the same database (closed automatically after the file). */
  client(options?: postgres.Options<Record<string, postgres.PostgresType>>): postgres.Sql;
}

/**
 * Creates a fresh database for the calling test file from the migrated template and drops it after the file.
 * Call it at module scope or in `beforeAll`.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${inject('templateDatabase')}`);
  const url = withDatabase(adminUrl, name);
  const clients: postgres.Sql[] = [];
  const client = (options: postgres.Options<Record<string, postgres.PostgresType>> = {}) => {
    const sql = postgres(url, { max: 4, onnotice: () => {}, ...options });
    clients.push(sql);
    return sql;
  };
  const sql = client();
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end({ timeout: 1 })));
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return { url, name, sql, client };
}
