import type postgres from 'postgres';
import {
  type MigrationSettings,
  migrationSettingsFromEnvironment,
} from '../../lambda/postgres/migrate-database.ts';
import type { DatabaseRoles, RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import { LOCAL_STAGES, synthesizeStage } from './iam/stack-policies.ts';

/**
 * The password of every database role a local run (`npm start`, the tests) provisions. Local only: the embedded
 * PostgreSQL authenticates with passwords, while the deployed roles have none and sign in with IAM tokens through
 * RDS Proxy (`rds_iam`).
 */
export const LOCAL_ROLE_PASSWORD = 'local-only-role-password';

/** The stack's database roles of every function, each named. */
export type LocalRoleNames = Readonly<Record<RoleFunction, string>>;

/** What the stack's migration function provisions, with every function's role named. */
export interface StackMigrationSettings extends MigrationSettings {
  readonly roles: LocalRoleNames;
}

/**
 * The settings the deployed migration function provisions the database roles with: its environment in the
 * synthesized stack (the first PostgreSQL stage of {@link LOCAL_STAGES}, `dev`: `WORKER_DB_USER`, …,
 * `DB_STATEMENT_TIMEOUT_MS`, `DB_LOCK_TIMEOUT_MS`), read as the handler reads it ({@link migrationSettingsFromEnvironment}).
 * Cached on disk with the stack's policies (`synthesizeStage`), so a local run after the first pays milliseconds.
 *
 * @throws Error when the synthesized stage leaves a function without a role (a stage without the relay, health or
 *   retention job): a local run runs every one of them.
 */
export async function stackMigrationSettings(): Promise<StackMigrationSettings> {
  for (const stage of LOCAL_STAGES.postgres) {
    const { migrationEnvironment } = await synthesizeStage(stage);
    if (!migrationEnvironment) continue;
    const settings = migrationSettingsFromEnvironment(migrationEnvironment);
    const missing = (['worker', 'relay', 'ops', 'health', 'retention'] as const).filter(
      (fn) => settings.roles[fn] === undefined,
    );
    if (missing.length > 0) {
      throw new Error(
        `The migration function of stage ${stage} provisions no database role for ${missing.join(', ')}; a local run runs every component as its role (set the stage's outboxRelay, healthCheck and retention in cdk.json)`,
      );
    }
    return settings as StackMigrationSettings;
  }
  throw new Error(`No stage of ${LOCAL_STAGES.postgres.join(', ')} has a migration function`);
}

/**
 * LOCAL ONLY — never part of the deployed path: gives each role {@link LOCAL_ROLE_PASSWORD}, so that the local
 * components can sign in as their roles. The roles themselves, their grants and their timeouts come from the
 * migration function's code (`migrateDatabase`); this adds the password the embedded PostgreSQL asks for and
 * nothing else.
 *
 * Roles belong to the server, not to one database, so local runs on one server at once (parallel test files, each
 * on its own database) may set one role's password at the same moment; PostgreSQL then fails one of the two
 * (`tuple concurrently updated`), which sets the same constant again.
 */
export async function setLocalRolePasswords(sql: postgres.Sql, roles: DatabaseRoles): Promise<void> {
  const names = Object.values(roles).filter((role): role is string => role !== undefined);
  for (const role of names) {
    for (let attempt = 1; ; attempt++) {
      try {
        // ALTER ROLE takes no bound parameters: the name is an identifier, the password a constant of this file.
        await sql`alter role ${sql(role)} with login password ${sql.unsafe(`'${LOCAL_ROLE_PASSWORD}'`)}`;
        break;
      } catch (error) {
        if (attempt >= 5 || !/tuple concurrently updated/.test((error as Error).message)) throw error;
      }
    }
  }
}

/**
 * `databaseUrl` signed in as `role` with {@link LOCAL_ROLE_PASSWORD} (same server, database and parameters).
 */
export function roleDatabaseUrl(databaseUrl: string, role: string): string {
  const url = new URL(databaseUrl);
  url.username = role;
  url.password = LOCAL_ROLE_PASSWORD;
  return url.toString();
}
