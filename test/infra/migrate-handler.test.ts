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
  const suffix = randomBytes(4).toString('hex');
  const role = `sqs_worker_${suffix}`;
  const relayRole = `sqs_relay_${suffix}`;
  const opsRole = `sqs_ops_${suffix}`;
  const migrationsDir = join(import.meta.dirname, '../../migrations');
  const saved = { ...process.env };
  let admin: postgres.Sql;
  let sql: postgres.Sql;
  beforeAll(async () => {
    admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const url = withDatabase(inject('adminDatabaseUrl'), name);
    sql = postgres(url, { max: 1, onnotice: () => {} });
    Object.assign(process.env, {
      DATABASE_URL: url,
      MIGRATIONS_DIR: migrationsDir,
      WORKER_DB_USER: role,
      RELAY_DB_USER: relayRole,
      OPS_DB_USER: opsRole,
    });
  });
  afterAll(async () => {
    process.env = saved;
    for (const each of [role, relayRole, opsRole]) await sql.unsafe(`drop owned by ${each}`);
    await sql.end();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    for (const each of [role, relayRole, opsRole]) await admin.unsafe(`drop role if exists ${each}`);
    await admin.end();
  });

  it('applies every migration once and provisions one role per function, each with its own tables only', async () => {
    // Prepare
    const files = readdirSync(migrationsDir).filter((file) => /^\d{5}_.+\.sql$/.test(file));

    // Act
    const first = await handler();
    const second = await handler();

    // Assess
    expect(first.applied).toEqual(files.map((_, index) => index + 1));
    expect(second).toEqual({ applied: [], current: files.length, workerRole: role, relayRole, opsRole });
    const privileges = await sql<{ role: string; login: boolean; privileges: string[] }[]>`
      select r.rolname as role, r.rolcanlogin as login,
             array(
               select t.table_name || ':' || p.privilege
                 from (values ('worker_inbox'), ('outbox_events'), ('ops_audit'), ('schema_migrations'), ('cases')) as t(table_name)
                 cross join (values ('select'), ('insert'), ('update'), ('delete'), ('truncate')) as p(privilege)
                where has_table_privilege(r.rolname, t.table_name, p.privilege)
                order by 1
             ) as privileges
        from pg_roles r where r.rolname in (${role}, ${relayRole}, ${opsRole})
       order by r.rolname = ${role} desc, r.rolname = ${relayRole} desc
    `;
    expect(privileges).toEqual([
      {
        role,
        login: true,
        privileges: [
          'cases:delete',
          'cases:insert',
          'cases:select',
          'cases:update',
          'outbox_events:insert',
          'worker_inbox:delete',
          'worker_inbox:insert',
          'worker_inbox:select',
          'worker_inbox:update',
        ],
      },
      // Table-level privileges only: the relay's and ops' UPDATEs are granted on named columns.
      { role: relayRole, login: true, privileges: ['outbox_events:select'] },
      {
        role: opsRole,
        login: true,
        privileges: ['ops_audit:insert', 'ops_audit:select', 'worker_inbox:delete', 'worker_inbox:select'],
      },
    ]);
    const [schema] = await sql`
      select bool_or(has_schema_privilege(r.rolname, 'public', 'create')) as can_create
        from pg_roles r where r.rolname in (${role}, ${relayRole}, ${opsRole})
    `;
    expect(schema).toEqual({ can_create: false });
  });

  it('refuses a role that is not a plain identifier, and two functions sharing one role', async () => {
    process.env.WORKER_DB_USER = 'worker; drop table cases';
    process.env.OPS_DB_USER = relayRole;

    await expect(handler()).rejects.toThrow(
      `WORKER_DB_USER must be a lowercase SQL identifier (given "worker; drop table cases"); OPS_DB_USER and RELAY_DB_USER are both "${relayRole}": give each function its own database role`,
    );
    process.env.WORKER_DB_USER = role;
    process.env.OPS_DB_USER = opsRole;
  });
});
