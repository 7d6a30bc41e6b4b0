import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type postgres from 'postgres';
import { MigrationError } from '../errors.ts';

/** A migration file found on disk (what `migrateDatabase`'s `onApply` is called with). */
export interface MigrationFile {
  /** Number from the file name (`00001_worker-inbox.sql` → 1). */
  readonly id: number;
  /** Name from the file name, without number and extension. */
  readonly name: string;
  /** Absolute path of the `.sql` file. */
  readonly path: string;
}

/**
 * What {@link runMigrations} did.
 *
 * @internal
 */
export interface MigrationResult {
  /** Migrations applied by this call, in order (empty when the database was up to date). */
  readonly applied: readonly MigrationFile[];
  /** Highest migration id present in the database after the call. */
  readonly current: number;
}

const FILE_PATTERN = /^(\d{5})_(.+)\.sql$/;
// Any constant works; it only has to be the same for every runner of this project.
const MIGRATION_LOCK_KEY = 7_316_204_581;

/**
 * Lists the forward-only migrations in `directory`: files named `NNNNN_name.sql`, numbered 1, 2, 3… with no gap.
 *
 * @throws MigrationError when the numbering has a gap or a duplicate.
 *
 * @internal
 */
export async function listMigrations(directory: string): Promise<MigrationFile[]> {
  const files = (await readdir(directory)).filter((file) => FILE_PATTERN.test(file)).sort();
  const migrations = files.map((file) => {
    const [, id, name] = FILE_PATTERN.exec(file) as RegExpExecArray;
    return { id: Number(id), name: String(name), path: join(directory, file) };
  });
  migrations.forEach((migration, index) => {
    if (migration.id !== index + 1) {
      throw new MigrationError(
        `Migration numbering must be contiguous from 00001 (found ${migration.path} where ${String(index + 1).padStart(5, '0')} was expected). Renumber the new file; never renumber one that has landed.`,
      );
    }
  });
  return migrations;
}

/**
 * Applies every pending migration in `directory` to the database behind `sql`, all in ONE transaction.
 *
 * Why not postgres-shift, whose conventions this follows (`/^[0-9]{5}_/`, contiguous numbers, one transaction):
 * it reads the current version outside its transaction and takes no lock, so two runners started at once
 * (two deploys, a test and `npm run migrate`) both apply migration 1 and one of them fails. Here the
 * transaction first takes a transaction-scoped advisory lock, so a second runner waits, then sees the
 * migrations the first applied and does nothing. The lock ends with the transaction (no session state).
 *
 * @example
 * ```ts
 * const { applied } = await runMigrations(sql, { directory: 'migrations' });
 * ```
 *
 * @internal
 */
export async function runMigrations(
  sql: postgres.Sql,
  options: { directory: string; onApply?: (migration: MigrationFile) => void },
): Promise<MigrationResult> {
  const migrations = await listMigrations(options.directory);
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`
      create table if not exists schema_migrations (
        migration_id integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )
    `;
    const [row] = await tx<{ current: number }[]>`
      select coalesce(max(migration_id), 0)::int as current from schema_migrations
    `;
    const current = row?.current ?? 0;
    const latest = migrations.at(-1)?.id ?? 0;
    if (current > latest) {
      throw new MigrationError(
        `The database is at migration ${current} but ${options.directory} holds only up to ${latest}. Deploy the code that carries migration ${current} (never delete a landed migration).`,
      );
    }
    const pending = migrations.filter((migration) => migration.id > current);
    for (const migration of pending) {
      options.onApply?.(migration);
      await tx.unsafe(await readFile(migration.path, 'utf8'));
      await tx`insert into schema_migrations (migration_id, name) values (${migration.id}, ${migration.name})`;
    }
    return { applied: pending, current: Math.max(current, latest) };
  });
}
