import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { MigrationError } from '../lambda/errors.ts';
import { connectOptions } from '../lambda/postgres/connect-options.ts';
import { parseDatabaseUrl } from '../lambda/postgres/database-url.ts';
import { describeDatabaseError } from '../lambda/postgres/describe-database-error.ts';
import { runMigrations } from '../lambda/postgres/run-migrations.ts';

/**
 * `npm run migrate`: applies the pending migrations in migrations/ to DATABASE_URL.
 * Exit codes: 0 migrated or up to date, 1 failed, 2 DATABASE_URL missing, invalid or refused by the server, or a
 * migration file that breaks the naming rule (`NNNNN_name.sql`) or the numbering (a gap, a duplicate).
 */
const url = process.env.DATABASE_URL;
if (!url) {
  console.error(
    'DATABASE_URL is not set. Set it to the database to migrate, e.g. DATABASE_URL=postgres://user:pass@host:5432/db npm run migrate',
  );
  process.exit(2);
}
const checked = parseDatabaseUrl(url, 'DATABASE_URL');
if ('problem' in checked) {
  console.error(`migration not started: ${checked.problem}`);
  process.exit(2);
}
const sql = postgres(url, {
  ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
  max: 1,
  onnotice: () => {},
});
try {
  const result = await runMigrations(sql, {
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    onApply: (migration) =>
      console.log(`applying ${String(migration.id).padStart(5, '0')} ${migration.name}`),
  });
  console.log(
    result.applied.length === 0 ? `up to date at ${result.current}` : `migrated to ${result.current}`,
  );
} catch (error) {
  const described = describeDatabaseError(error, { setting: 'DATABASE_URL', address: checked.address });
  console.error(`migration failed: ${described.message}`);
  // A misnamed migration file or a gap in the numbering is the files' configuration, like a bad DATABASE_URL.
  process.exitCode = described.configuration || error instanceof MigrationError ? 2 : 1;
} finally {
  await sql.end({ timeout: 5 });
}
