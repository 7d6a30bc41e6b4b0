import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler } from '../../lambda/handlers/migrate.ts';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
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

// The migration function as deployed: the environment the stack synthesizes for it (a DATABASE_URL in place of
// the instance and its secret), against a real, empty PostgreSQL database. Every role the stack names is created.
describe('Function: migrate handler with the environment the stack gives it', () => {
  const name = `migstack_${randomBytes(4).toString('hex')}`;
  const suffix = randomBytes(4).toString('hex');
  const users = {
    workerDbUser: `stack_worker_${suffix}`,
    relayDbUser: `stack_relay_${suffix}`,
    opsDbUser: `stack_ops_${suffix}`,
    healthDbUser: `stack_health_${suffix}`,
    retentionDbUser: `stack_retention_${suffix}`,
  };
  const saved = { ...process.env };
  let admin: postgres.Sql;
  let sql: postgres.Sql;
  let synthesized: Record<string, string>;
  beforeAll(async () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new SqsInboxWorkerStack(app, 'MigrateEnvironment', {
      worker: { production: false, alarms: 'none', ...users },
    });
    const [migration] = Object.values(
      Template.fromStack(stack).findResources('AWS::Lambda::Function', {
        Properties: { Description: Match.stringLikeRegexp('^Applies pending migrations') },
      }),
    );
    // The plain values; the instance's address and its secret are references, replaced by DATABASE_URL here.
    synthesized = Object.fromEntries(
      Object.entries(migration?.Properties.Environment.Variables as Record<string, unknown>).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string',
      ),
    );
    admin = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const url = withDatabase(inject('adminDatabaseUrl'), name);
    sql = postgres(url, { max: 1, onnotice: () => {} });
    for (const key of Object.keys(process.env)) if (/_DB_USER$/.test(key)) delete process.env[key];
    Object.assign(process.env, synthesized, {
      DATABASE_URL: url,
      MIGRATIONS_DIR: join(import.meta.dirname, '../../migrations'),
    });
  });
  afterAll(async () => {
    process.env = saved;
    for (const each of Object.values(users)) await sql.unsafe(`drop owned by ${each}`).catch(() => {});
    await sql.end();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    for (const each of Object.values(users)) await admin.unsafe(`drop role if exists ${each}`);
    await admin.end();
  });

  it("creates every role the stack names, the retention job's included, each able to log in", async () => {
    // Prepare: the role variables the stack sets, the retention job's among them
    const named = Object.entries(synthesized).filter(([key]) => /_DB_USER$/.test(key));
    expect(Object.fromEntries(named)).toMatchObject({ RETENTION_DB_USER: users.retentionDbUser });

    // Act
    await handler();

    // Assess
    const roles = await sql<{ role: string; login: boolean }[]>`
      select rolname as role, rolcanlogin as login from pg_roles
       where rolname in ${sql(named.map(([, role]) => role))} order by rolname
    `;
    const byName = (a: { role: string }, b: { role: string }) => a.role.localeCompare(b.role);
    expect([...roles].sort(byName)).toEqual(named.map(([, role]) => ({ role, login: true })).sort(byName));
    const [retention] = await sql<{ purges: boolean }[]>`
      select has_table_privilege(${users.retentionDbUser}, 'worker_inbox', 'delete') as purges
    `;
    expect(retention).toEqual({ purges: true });
  });
});
