import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, inject } from 'vitest';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/provision-roles.ts';
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
 * The connecting role gets the deployed worker role's `statement_timeout` and `lock_timeout` defaults in it
 * (15 s, 5 s); a test that needs other values opens a client with them as connection parameters
 * (`client({ connection: { lock_timeout: 200 } })`), the role default's equivalent for that client alone.
 * Call it at module scope or in `beforeAll`.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${inject('templateDatabase')}`);
  // The engine sets no timeout itself: deployed, they are the worker role's defaults in its database (see
  // provisionRoles). Tests connect as the admin role, so it gets the same defaults here, in this database only.
  const [{ role } = { role: '' }] = await admin<{ role: string }[]>`select current_user as role`;
  await setRoleTimeouts(admin, role, name, DEFAULT_ROLE_TIMEOUTS);
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
