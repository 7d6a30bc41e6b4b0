import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { effectKey } from '../../lambda/effects/effect-key.ts';
import { MigrationError } from '../../lambda/errors.ts';
import { listMigrations, runMigrations } from '../../lambda/postgres/run-migrations.ts';
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
    const { sql, url } = await emptyDatabase();
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
    // Every new session of the database ends a transaction left idle for 60 s
    const fresh = postgres(url, { max: 1, onnotice: () => {} });
    const [setting] = await fresh`show idle_in_transaction_session_timeout`;
    expect(setting?.idle_in_transaction_session_timeout).toBe('1min');
    await fresh.end();
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
    await expect(listMigrations(directory)).rejects.toThrow(
      /^migration 00002 is missing between 00001_a\.sql and 00003_c\.sql in /,
    );
  });

  it('applies nothing when a .sql file breaks the naming rule, naming it, instead of skipping it', async () => {
    // Prepare: the project's migrations plus a user's next one, numbered with four digits where the rule has five
    const { sql } = await emptyDatabase();
    const directory = await mkdtemp(join(tmpdir(), 'migrations-'));
    const project = await listMigrations(MIGRATIONS);
    for (const migration of project) {
      await copyFile(migration.path, join(directory, basename(migration.path)));
    }
    const next = project.length + 1;
    const misnamed = `${String(next).padStart(4, '0')}_invoices.sql`;
    const renamed = `${String(next).padStart(5, '0')}_invoices.sql`;
    await writeFile(join(directory, misnamed), 'create table invoices (invoice_id text primary key);');
    await writeFile(join(directory, 'README.md'), 'not a migration');

    // Act
    const error = await runMigrations(sql, { directory }).catch((e: unknown) => e);

    // Assess: refused before any statement ran, so the database is still empty
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toContain(`migration file ${misnamed} in `);
    expect((error as Error).message).toMatch(/NNNNN_name\.sql .*rename \S+ to \S+$/);
    expect((error as Error).message.endsWith(`rename ${misnamed} to ${renamed}`)).toBe(true);
    const tables = await sql`select table_name from information_schema.tables where table_schema = 'public'`;
    expect(tables).toEqual([]);

    // Act: renamed as the error says, it runs
    await rename(join(directory, misnamed), join(directory, renamed));
    const result = await runMigrations(sql, { directory });

    // Assess
    expect(result.current).toBe(next);
    const [invoices] =
      await sql`select count(*)::int as n from information_schema.tables where table_name = 'invoices'`;
    expect(invoices?.n).toBe(1);
    await sql.end();
  });
  it('moves existing external effects to keys that name their consumer, keeping the key the provider knows', async () => {
    // Prepare: a database at migration 00005 with effects written under the old keys
    const { sql } = await emptyDatabase();
    const before = await mkdtemp(join(tmpdir(), 'migrations-'));
    for (const migration of (await listMigrations(MIGRATIONS)).filter((m) => m.id <= 5)) {
      await copyFile(migration.path, join(before, basename(migration.path)));
    }
    await runMigrations(sql, { directory: before });
    const longKey = `case:${'x'.repeat(190)}`;
    const hashedOld = `escalation-notification:sha256:${createHash('sha256').update(longKey).digest('hex')}`;
    for (const [consumer, key] of [
      ['case-worker', 'case:1:esc'],
      ['case-worker', longKey],
      ['case-worker', 'case:2:esc'],
      ['audit-worker', 'case:2:esc'],
    ] as const) {
      await sql`
        insert into worker_inbox (
          consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id, status, request_hash
        )
        values (${consumer}, ${key}, 'CaseEscalationRequested', 1, 'case', 'case-1', 'COMPLETED', ${'0'.repeat(64)})
      `;
    }
    for (const key of [
      'escalation-notification:case:1:esc',
      hashedOld,
      'escalation-notification:case:2:esc',
      'escalation-notification:orphan',
    ]) {
      await sql`
        insert into external_effect_log (effect_key, provider, operation, status, request_hash)
        values (${key}, 'fake', 'escalation-notification', 'PENDING', ${'0'.repeat(64)})
      `;
    }
    await sql`insert into cases (case_id, stage, version) values ('case-1', 'INVESTIGATION', 1)`;
    await sql`
      insert into case_notifications (source_event_id, case_id, recipient, effect_key, provider_reference)
      values ('case:1:esc', 'case-1', 'r', 'escalation-notification:case:1:esc', 'ref-1')
    `;

    // Act
    await runMigrations(sql, { directory: MIGRATIONS });

    // Assess: one owner → the new key (computed as effectKey does), the provider's key unchanged; shared by two
    // consumers or by none → unchanged
    const rows = await sql`select effect_key, provider_key from external_effect_log order by provider_key`;
    expect(rows).toEqual(
      [
        {
          effect_key: effectKey('case-worker', 'escalation-notification', 'case:1:esc'),
          provider_key: 'escalation-notification:case:1:esc',
        },
        {
          effect_key: 'escalation-notification:case:2:esc',
          provider_key: 'escalation-notification:case:2:esc',
        },
        { effect_key: 'escalation-notification:orphan', provider_key: 'escalation-notification:orphan' },
        { effect_key: effectKey('case-worker', 'escalation-notification', longKey), provider_key: hashedOld },
      ].sort((a, b) => a.provider_key.localeCompare(b.provider_key)),
    );
    const [notification] =
      await sql`select effect_key from case_notifications where source_event_id = 'case:1:esc'`;
    expect(notification?.effect_key).toBe('case-worker/escalation-notification:case:1:esc');
    await sql.end();
  });
});
