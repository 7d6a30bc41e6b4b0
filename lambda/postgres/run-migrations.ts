import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
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

/** The naming rule of a migration file: five digits, an underscore, a name, `.sql` (`00001_worker-inbox.sql`). */
const FILE_PATTERN = /^(\d{5})_(.+)\.sql$/;
/** The rule as the errors state it. */
export const MIGRATION_FILE_RULE =
  'NNNNN_name.sql (five digits, an underscore, a name: 00001_worker-inbox.sql)';
// Any constant works; it only has to be the same for every runner of this project.
const MIGRATION_LOCK_KEY = 7_316_204_581;

const pad = (id: number) => String(id).padStart(5, '0');

/**
 * The name a misnamed migration file should have: its own number with five digits when it starts with one
 * (`0011_invoices.sql` → `00011_invoices.sql`), else the next free number before its name.
 */
function suggestedName(file: string, next: number): string {
  const base = file.replace(/\.sql$/i, '');
  const numbered = /^(\d+)[_\-. ]*(.*)$/.exec(base);
  const name = (numbered ? numbered[2] : base) || 'name';
  const id = numbered && Number(numbered[1]) > 0 ? Number(numbered[1]) : next;
  return `${pad(id)}_${name.replace(/^[_\-. ]+/, '')}.sql`;
}

/**
 * Lists the forward-only migrations in `directory`: files named `NNNNN_name.sql`, numbered 1, 2, 3… with no gap.
 * Files that do not end in `.sql` (a README.md) are ignored; a `.sql` file that breaks the naming rule is an error,
 * never skipped, so a migration cannot silently not run.
 *
 * @throws MigrationError naming the file and the fix when a `.sql` file breaks the naming rule, when the numbering
 * has a gap or a duplicate, or when `directory` is not a folder.
 *
 * @internal
 */
export async function listMigrations(directory: string): Promise<MigrationFile[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    throw new MigrationError(
      `no migrations folder at ${directory} (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the folder that holds the NNNNN_name.sql files`,
      { directory },
    );
  }
  const sqlFiles = entries.filter((file) => /\.sql$/i.test(file)).sort();
  const files = sqlFiles.filter((file) => FILE_PATTERN.test(file));
  const misnamed = sqlFiles.filter((file) => !FILE_PATTERN.test(file));
  if (misnamed.length > 0) {
    const highest = Math.max(0, ...files.map((file) => Number(file.slice(0, 5))));
    const renames = misnamed.map((file) => `${file} to ${suggestedName(file, highest + 1)}`).join(', ');
    throw new MigrationError(
      `migration file${misnamed.length > 1 ? 's' : ''} ${misnamed.join(', ')} in ${directory} ${misnamed.length > 1 ? 'do' : 'does'} not match the naming rule ${MIGRATION_FILE_RULE}, so ${misnamed.length > 1 ? 'they' : 'it'} would never run: rename ${renames}`,
      { directory, file: misnamed[0] },
    );
  }
  const migrations = files.map((file) => {
    const [, id, name] = FILE_PATTERN.exec(file) as RegExpExecArray;
    return { id: Number(id), name: String(name), path: join(directory, file) };
  });
  migrations.forEach((migration, index) => {
    const expected = index + 1;
    if (migration.id === expected) return;
    const file = basename(migration.path);
    const previous = migrations[index - 1];
    if (previous && migration.id === previous.id) {
      const next = pad((migrations.at(-1)?.id ?? 0) + 1);
      throw new MigrationError(
        `migration ${pad(migration.id)} is numbered twice in ${directory}: ${basename(previous.path)} and ${file}; give the new one the next free number, ${next} (never renumber a migration that has landed)`,
        { directory, file },
      );
    }
    const missing =
      migration.id - expected === 1
        ? `migration ${pad(expected)} is`
        : `migrations ${pad(expected)}–${pad(migration.id - 1)} are`;
    const where = previous ? `between ${basename(previous.path)} and ${file}` : `before ${file}`;
    const fix = `restore it, or renumber ${file} to ${pad(expected)} if it has not landed yet (never renumber one that has)`;
    throw new MigrationError(`${missing} missing ${where} in ${directory}: ${fix}`, { directory, file });
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
