import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, inject } from 'vitest';
import { migrateDatabase } from '../../lambda/postgres/migrate-database.ts';
import {
  DEFAULT_ROLE_TIMEOUTS,
  type RoleFunction,
  setRoleTimeouts,
} from '../../lambda/postgres/provision-roles.ts';
import { ROUND_TRIP_OPTIONS } from '../../lambda/postgres/round-trip-options.ts';
import {
  type LocalRoleNames,
  roleDatabaseUrl,
  stackMigrationSettings,
} from '../../tools/local/local-database-roles.ts';
import { withDatabase } from './global-setup.ts';

type ClientOptions = postgres.Options<Record<string, postgres.PostgresType>>;

/** A database of one test file, cloned from the migrated template. */
export interface TestDatabase {
  /** Connection URL of the database (its owner, the server's admin user). */
  readonly url: string;
  /** Name of the database. */
  readonly name: string;
  /** A client (pool of 4) for assertions and setup. */
  readonly sql: postgres.Sql;
  /** Opens another client on the same database (closed automatically after the file). */
  client(options?: ClientOptions): postgres.Sql;
  /** The stack's database role of each function (`sqs_worker`, `sqs_outbox_relay`, …). */
  readonly roles: LocalRoleNames;
  /** True when created with `roles: true`: {@link TestDatabase.as} and {@link TestDatabase.roleUrl} work. */
  readonly rolesProvisioned: boolean;
  /**
   * The URL signed in as `fn`'s role. The poller and the breaker's probe use the worker's, as deployed.
   * Needs `createTestDatabase({ roles: true })`.
   */
  roleUrl(fn: RoleFunction): string;
  /** A client signed in as `fn`'s role (closed after the file). Needs `createTestDatabase({ roles: true })`. */
  as(fn: RoleFunction, options?: ClientOptions): postgres.Sql;
}

/** Options of {@link createTestDatabase}. */
export interface TestDatabaseOptions {
  /**
   * Provisions the stack's database roles in this database, as the migration function does (`migrateDatabase`:
   * grants reconciled, the worker's and the relay's timeouts set in this database), so that the components under
   * test connect as their roles ({@link TestDatabase.as}). @default false
   */
  readonly roles?: boolean;
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * Creates a fresh database for the calling test file from the migrated template and drops it after the file.
 * The connecting role gets the deployed worker role's `statement_timeout` and `lock_timeout` defaults in it
 * (15 s, 5 s); a test that needs other values opens a client with them as connection parameters
 * (`client({ connection: { lock_timeout: 200 } })`), the role default's equivalent for that client alone.
 * With `roles: true` the stack's roles are provisioned in it too (the global setup made them, with their
 * local-only password, in the template). Call it at module scope or in `beforeAll`.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${inject('templateDatabase')}`);
  // The engine sets no timeout itself: deployed, they are the worker role's defaults in its database (see
  // provisionRoles). Most tests connect as the admin role, so it gets the same defaults here, in this database only.
  const [{ role } = { role: '' }] = await admin<{ role: string }[]>`select current_user as role`;
  await setRoleTimeouts(admin, role, name, DEFAULT_ROLE_TIMEOUTS);
  const url = withDatabase(adminUrl, name);
  const settings = await stackMigrationSettings();
  if (options.roles) {
    // Role timeouts are per database (ALTER ROLE … IN DATABASE): a clone does not inherit the template's.
    const owner = postgres(url, { max: 1, onnotice: () => {} });
    await migrateDatabase(owner, { ...settings, directory: MIGRATIONS }).finally(() =>
      owner.end({ timeout: 1 }),
    );
  }
  const clients: postgres.Sql[] = [];
  const connect = (target: string, clientOptions: ClientOptions = {}) => {
    // The worker's driver options (createSql), so that every test runs on what is deployed.
    const sql = postgres(target, { max: 4, onnotice: () => {}, ...ROUND_TRIP_OPTIONS, ...clientOptions });
    clients.push(sql);
    return sql;
  };
  const roleUrl = (fn: RoleFunction) => {
    if (!options.roles) {
      throw new Error(
        `createTestDatabase: the ${fn} role is not provisioned in ${name}; call createTestDatabase({ roles: true })`,
      );
    }
    return roleDatabaseUrl(url, settings.roles[fn]);
  };
  const sql = connect(url);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end({ timeout: 1 })));
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  return {
    url,
    name,
    sql,
    client: (clientOptions) => connect(url, clientOptions),
    roles: settings.roles,
    rolesProvisioned: options.roles === true,
    roleUrl,
    as: (fn, clientOptions) => connect(roleUrl(fn), clientOptions),
  };
}
