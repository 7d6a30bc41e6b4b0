import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { runMigrations } from '../lambda/run-migrations.ts';

/** `npm run migrate`: applies the pending migrations in migrations/ to DATABASE_URL. */
const url = process.env.DATABASE_URL;
if (!url) {
  console.error(
    'DATABASE_URL is not set. Set it to the database to migrate, e.g. DATABASE_URL=postgres://user:pass@host:5432/db npm run migrate',
  );
  process.exit(2);
}
const sql = postgres(url, { max: 1, onnotice: () => {} });
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
  console.error(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await sql.end();
}
