import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { MigrationError } from '../../lambda/errors.ts';
import { listMigrations, runMigrations } from '../../lambda/run-migrations.ts';
import { withDatabase } from '../support/global-setup.ts';

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));
const admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
const created: string[] = [];
afterAll(async () => {
  for (const name of created) await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
});

async function emptyDatabase(): Promise<{ sql: postgres.Sql; url: string }> {
  const name = `migrate_${Math.random().toString(36).slice(2, 10)}`;
  await admin.unsafe(`create database ${name}`);
  created.push(name);
  const url = withDatabase(inject('adminDatabaseUrl'), name);
  return { sql: postgres(url, { max: 2, onnotice: () => {} }), url };
}

describe('Function: runMigrations()', () => {
  it('applies every migration to an empty database and re-applies as a no-op', async () => {
    // Prepare
    const { sql } = await emptyDatabase();
    const expected = (await listMigrations(MIGRATIONS)).map((migration) => migration.id);

    // Act
    const first = await runMigrations(sql, { directory: MIGRATIONS });
    const second = await runMigrations(sql, { directory: MIGRATIONS });

    // Assess
    expect(first.applied.map((migration) => migration.id)).toEqual(expected);
    expect(second.applied).toEqual([]);
    const tables =
      await sql`select table_name from information_schema.tables where table_schema = 'public' order by 1`;
    expect(tables.map((row) => row.table_name)).toEqual(
      expect.arrayContaining([
        'worker_inbox',
        'worker_quarantine',
        'cases',
        'case_deadlines',
        'ledger_entries',
        'schema_migrations',
      ]),
    );
    const [check] =
      await sql`select count(*)::int as n from pg_constraint where conname = 'chk_worker_inbox_status'`;
    expect(check?.n).toBe(1);
    await sql.end();
  });

  it('lets two runners start at once without collision: one applies, the other finds nothing to do', async () => {
    // Prepare
    const { sql, url } = await emptyDatabase();
    const other = postgres(url, { max: 1, onnotice: () => {} });

    // Act
    const [a, b] = await Promise.all([
      runMigrations(sql, { directory: MIGRATIONS }),
      runMigrations(other, { directory: MIGRATIONS }),
    ]);

    // Assess
    const counts = [a.applied.length, b.applied.length].sort();
    expect(counts[0]).toBe(0);
    expect(counts[1]).toBe((await listMigrations(MIGRATIONS)).length);
    const [row] = await sql`select count(*)::int as n from schema_migrations`;
    expect(row?.n).toBe(counts[1]);
    await Promise.all([sql.end(), other.end()]);
  });

  it('refuses a gap in the numbering, naming the file', async () => {
    // Prepare
    const directory = await mkdtemp(join(tmpdir(), 'migrations-'));
    await writeFile(join(directory, '00001_a.sql'), 'select 1;');
    await writeFile(join(directory, '00003_c.sql'), 'select 1;');

    // Act & Assess
    await expect(listMigrations(directory)).rejects.toThrow(MigrationError);
    await expect(listMigrations(directory)).rejects.toThrow(/00003_c\.sql where 00002 was expected/);
  });
});
