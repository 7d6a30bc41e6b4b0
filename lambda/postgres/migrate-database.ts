import type postgres from 'postgres';
import {
  checkRoleNames,
  type DatabaseRoles,
  provisionRoles,
  type RoleTimeouts,
  rolesFromEnvironment,
  roleTimeoutsFromEnvironment,
} from './provision-roles.ts';
import { type MigrationFile, runMigrations } from './run-migrations.ts';

/** What one run of the migration function did (returned to the deploy trigger, visible in its logs). */
export interface MigrateResult {
  /** Ids of the migrations applied by this run. */
  readonly applied: readonly number[];
  /** Highest migration id in the database after the run. */
  readonly current: number;
  /** The database role provisioned for the worker (IAM authentication through RDS Proxy). */
  readonly workerRole: string | undefined;
  /** The database role provisioned for the outbox relay. */
  readonly relayRole: string | undefined;
  /** The database role provisioned for the ops CLI's commands. */
  readonly opsRole: string | undefined;
  /** The database role provisioned for the scheduled health job. */
  readonly healthRole: string | undefined;
  /** The database role provisioned for the scheduled retention job. */
  readonly retentionRole: string | undefined;
}

/** The roles and timeouts a migration run provisions, as its environment names them. */
export interface MigrationSettings {
  readonly roles: DatabaseRoles;
  readonly timeouts: RoleTimeouts;
}

/**
 * Reads what the migration function provisions from its environment: one role per function
 * ({@link rolesFromEnvironment}: `WORKER_DB_USER`, `RELAY_DB_USER`, `OPS_DB_USER`, `HEALTH_DB_USER`,
 * `RETENTION_DB_USER`) and the worker's and the relay's timeouts (`DB_STATEMENT_TIMEOUT_MS`, `DB_LOCK_TIMEOUT_MS`).
 *
 * @throws ConfigError naming the variable, the value and the fix (before anything is connected or applied).
 */
export function migrationSettingsFromEnvironment(env: Record<string, string | undefined>): MigrationSettings {
  const roles = rolesFromEnvironment(env);
  checkRoleNames(roles);
  return { roles, timeouts: roleTimeoutsFromEnvironment(env) };
}

/** Options of {@link migrateDatabase}. */
export interface MigrateDatabaseOptions extends MigrationSettings {
  /** The forward-only migrations (`NNNNN_name.sql`). */
  readonly directory: string;
  /** Called before each migration is applied. */
  readonly onApply?: (migration: MigrationFile) => void;
}

/**
 * The migration function's work on a connected database (`sql`, as its owner): applies the pending migrations
 * ({@link runMigrations}), then provisions the functions' roles with their grants and role-level timeouts
 * ({@link provisionRoles}). The deployed handler (`lambda/handlers/migrate.ts`) runs it as the master user; the
 * local runtime (`npm start`) and the test setup run it too, so every role is made by this one code path.
 */
export async function migrateDatabase(
  sql: postgres.Sql,
  options: MigrateDatabaseOptions,
): Promise<MigrateResult> {
  const result = await runMigrations(sql, { directory: options.directory, onApply: options.onApply });
  await provisionRoles(sql, options.roles, options.timeouts);
  return {
    applied: result.applied.map((migration) => migration.id),
    current: result.current,
    workerRole: options.roles.worker,
    relayRole: options.roles.relay,
    opsRole: options.roles.ops,
    healthRole: options.roles.health,
    retentionRole: options.roles.retention,
  };
}
