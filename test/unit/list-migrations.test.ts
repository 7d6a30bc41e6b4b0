import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MigrationError } from '../../lambda/errors.ts';
import { listMigrations } from '../../lambda/postgres/run-migrations.ts';

const folders: string[] = [];
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

/** A migrations folder holding `files` (each `select 1;`). */
async function folderWith(files: readonly string[]): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'migrations-'));
  folders.push(directory);
  for (const file of files) await writeFile(join(directory, file), 'select 1;');
  return directory;
}

/** The MigrationError `listMigrations(directory)` rejects with. */
async function refusal(directory: string): Promise<MigrationError> {
  const error = await listMigrations(directory).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MigrationError);
  return error as MigrationError;
}

describe('Function: listMigrations()', () => {
  it('lists NNNNN_name.sql files in order and ignores files that are not .sql', async () => {
    // Prepare
    const directory = await folderWith(['00002_b.sql', 'README.md', '00001_a.sql', 'notes.txt']);

    // Act
    const migrations = await listMigrations(directory);

    // Assess
    expect(migrations).toEqual([
      { id: 1, name: 'a', path: join(directory, '00001_a.sql') },
      { id: 2, name: 'b', path: join(directory, '00002_b.sql') },
    ]);
  });

  it('refuses a .sql file with four digits, naming the file, the rule and the rename', async () => {
    // Prepare
    const directory = await folderWith(['00001_worker-inbox.sql', '0002_invoices.sql']);

    // Act
    const error = await refusal(directory);

    // Assess
    expect(error.file).toBe('0002_invoices.sql');
    expect(error.message).toBe(
      `migration file 0002_invoices.sql in ${directory} does not match the naming rule NNNNN_name.sql (five digits, an underscore, a name: 00001_worker-inbox.sql), so it would never run: rename 0002_invoices.sql to 00002_invoices.sql`,
    );
  });

  it('refuses a .sql file without a number, suggesting the next one, and names every misnamed file', async () => {
    // Prepare
    const directory = await folderWith(['00001_a.sql', 'invoices.sql', '2-b.SQL']);

    // Act
    const error = await refusal(directory);

    // Assess
    expect(error.message).toMatch(
      /^migration files 2-b\.SQL, invoices\.sql in .* do not match the naming rule NNNNN_name\.sql .*: rename 2-b\.SQL to 00002_b\.sql, invoices\.sql to 00002_invoices\.sql$/,
    );
  });

  it('names the missing number and its neighbours for a gap', async () => {
    // Prepare
    const directory = await folderWith(['00001_a.sql', '00002_b.sql', '00003_c.sql', '00005_e.sql']);

    // Act
    const error = await refusal(directory);

    // Assess
    expect(error.file).toBe('00005_e.sql');
    expect(error.message).toBe(
      `migration 00004 is missing between 00003_c.sql and 00005_e.sql in ${directory}: restore it, or renumber 00005_e.sql to 00004 if it has not landed yet (never renumber one that has)`,
    );
    expect(error.message).not.toContain('\n');
  });

  it('names a missing range, a missing first migration and a duplicate number', async () => {
    // Prepare
    const range = await folderWith(['00001_a.sql', '00004_d.sql']);
    const first = await folderWith(['00002_b.sql']);
    const twice = await folderWith(['00001_a.sql', '00002_b.sql', '00002_other.sql']);

    // Act
    const errors = await Promise.all([refusal(range), refusal(first), refusal(twice)]);

    // Assess
    expect(errors.map((error) => error.message.split(' in ')[0])).toEqual([
      'migrations 00002–00003 are missing between 00001_a.sql and 00004_d.sql',
      'migration 00001 is missing before 00002_b.sql',
      'migration 00002 is numbered twice',
    ]);
    expect(errors[2]?.message).toContain(
      '00002_b.sql and 00002_other.sql; give the new one the next free number, 00003',
    );
  });

  it('names a folder that does not exist', async () => {
    // Act
    const error = await refusal(join(tmpdir(), 'no-such-migrations-folder'));

    // Assess
    expect(error.message).toMatch(/^no migrations folder at .*no-such-migrations-folder \(ENOENT\)/);
  });
});
