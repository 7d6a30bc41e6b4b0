import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler } from '../../lambda/handlers/migrate.ts';
import { withDatabase } from '../support/global-setup.ts';

// The deploy-time migration function against a real, EMPTY PostgreSQL database (DATABASE_URL stands in for
// the master secret that the deployed function reads).
describe('Function: migrate handler', () => {
  const name = `mig_${randomBytes(4).toString('hex')}`;
  const role = `sqs_worker_${randomBytes(4).toString('hex')}`;
  const migrationsDir = join(import.meta.dirname, '../../migrations');
  const saved = { ...process.env };
  let admin: postgres.Sql;
  let sql: postgres.Sql;
  beforeAll(async () => {
    admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const url = withDatabase(inject('adminDatabaseUrl'), name);
    sql = postgres(url, { max: 1, onnotice: () => {} });
    Object.assign(process.env, { DATABASE_URL: url, MIGRATIONS_DIR: migrationsDir, WORKER_DB_USER: role });
  });
  afterAll(async () => {
    process.env = saved;
    await sql.unsafe(`drop owned by ${role}`);
    await sql.end();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.unsafe(`drop role if exists ${role}`);
    await admin.end();
  });

  it('applies every migration once and provisions the worker role with data access only', async () => {
    // Prepare
    const files = readdirSync(migrationsDir).filter((file) => /^\d{5}_.+\.sql$/.test(file));

    // Act
    const first = await handler();
    const second = await handler();

    // Assess
    expect(first.applied).toEqual(files.map((_, index) => index + 1));
    expect(second).toEqual({ applied: [], current: files.length, workerRole: role });
    const [grants] = await sql`
      select r.rolcanlogin as login,
             has_table_privilege(${role}, 'worker_inbox', 'insert') as can_insert,
             has_table_privilege(${role}, 'worker_inbox', 'truncate') as can_truncate,
             has_schema_privilege(${role}, 'public', 'create') as can_create
        from pg_roles r where r.rolname = ${role}
    `;
    expect(grants).toEqual({ login: true, can_insert: true, can_truncate: false, can_create: false });
  });

  it('refuses a worker role that is not a plain identifier', async () => {
    process.env.WORKER_DB_USER = 'worker; drop table cases';

    await expect(handler()).rejects.toThrow(
      'WORKER_DB_USER must be a lowercase SQL identifier (given "worker; drop table cases")',
    );
    process.env.WORKER_DB_USER = role;
  });
});
