/**
 * `sqs-inbox-worker/postgres`: a worker on the PostgreSQL store — the Lambda worker wired from the environment
 * (`createWorkerFromConfig`), the postgres.js client it and your own wiring use (`createSql`, through RDS Proxy
 * with IAM authentication or from `DATABASE_URL`), the toolkit's migrations and database roles (`migrateDatabase`,
 * what the stack's migration function runs on every deploy), and the canary handler every PostgreSQL worker
 * registers. Handlers are written with `defineHandler` from `sqs-inbox-worker`. The toolkit's migrations are the
 * package's `migrations/` folder.
 *
 * Only re-exports: it gathers the PostgreSQL side of the runtimes and of the connection plumbing (`lambda/postgres/`)
 * for the store's users; nothing under `lambda/` but the deployable entries imports it. A bundle built from it holds
 * no DynamoDB code.
 *
 * @example
 * ```ts
 * import { defineHandler } from 'sqs-inbox-worker';
 * import { createWorkerFromConfig } from 'sqs-inbox-worker/postgres';
 *
 * export const handlers = [invoiceIssued];
 * export const handler = createWorkerFromConfig({ handlers });
 * ```
 *
 * @packageDocumentation
 */

export { canaryHandler } from '../../canary/canary-handler.ts';
export type { DatabaseConfig } from '../../config.ts';
export { COMMIT_MODES } from '../../constants.ts';
export { createSql } from '../../postgres/db.ts';
export {
  type MigrateDatabaseOptions,
  type MigrateResult,
  migrateDatabase,
} from '../../postgres/migrate-database.ts';
export {
  type DatabaseRoles,
  DEFAULT_ROLE_TIMEOUTS,
  type RoleTimeouts,
} from '../../postgres/provision-roles.ts';
export type { MigrationFile } from '../../postgres/run-migrations.ts';
export type { PostgresWorkerFromConfigOptions as WorkerFromConfigOptions } from '../../runtimes/lambda/create-worker-from-config.ts';
export { createWorkerFromConfig } from '../../runtimes/lambda/create-worker-from-config.ts';
export type { CommitMode } from '../../types.ts';
