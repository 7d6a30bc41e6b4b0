import { randomBytes, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { SendMessageBatchCommand, SendMessageBatchCommandOutput } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { performExternalEffect } from '../../lambda/effects/perform-external-effect.ts';
import { collectHealth } from '../../lambda/health/collect-health.ts';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { provisionRoles, roleTimeoutsFromEnvironment } from '../../lambda/postgres/provision-roles.ts';
import { purgeRetention } from '../../lambda/retention/purge-retention.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { runOpsCommand } from '../../tools/ops/run-ops-command.ts';
import { inboxPurge } from '../../tools/ops/stores/postgres/inbox-purge.ts';
import { rearmInbox } from '../../tools/ops/stores/postgres/rearm-inbox.ts';
import { finishAudit, recordAudit } from '../../tools/ops/stores/postgres/record-audit.ts';
import { createTestDatabase } from '../support/database.ts';
import { seedOpsState } from '../support/ops-state.ts';
import {
  caseStageEnvelope,
  envelopeFactory,
  lambdaContext,
  sqsEvent,
  sqsRecordFactory,
} from '../support/sqs-event.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { waitFor } from '../support/wait-for.ts';

// Each function's database role, provisioned by the migration function's code, then used over real connections
// (a password is set for the test only; deployed roles log in with IAM tokens). Roles are cluster-wide, hence
// the random suffix.
const db = await createTestDatabase();
const suffix = randomBytes(4).toString('hex');
const roles = {
  worker: `t_worker_${suffix}`,
  relay: `t_relay_${suffix}`,
  ops: `t_ops_${suffix}`,
  health: `t_health_${suffix}`,
  retention: `t_retention_${suffix}`,
} as const;
const PASSWORD = 'test-only-role-password';

/** A client logged in as `role`. */
function as(role: string): postgres.Sql {
  return db.client({ max: 2, username: role, password: PASSWORD });
}

let worker: postgres.Sql;
let relay: postgres.Sql;
let ops: postgres.Sql;
let health: postgres.Sql;
let retention: postgres.Sql;
beforeAll(async () => {
  // An already deployed database: the worker role holds what earlier versions granted (everything, on every
  // table, now and later). Provisioning must take that back, not only add.
  await db.sql`create role ${db.sql(roles.worker)} with login`;
  await db.sql`grant select, insert, update, delete on all tables in schema public to ${db.sql(roles.worker)}`;
  await db.sql`alter default privileges in schema public grant select, insert, update, delete on tables to ${db.sql(roles.worker)}`;

  await provisionRoles(db.sql, roles);
  for (const role of Object.values(roles)) {
    await db.sql.unsafe(`alter role "${role}" password '${PASSWORD}'`);
  }
  worker = as(roles.worker);
  relay = as(roles.relay);
  ops = as(roles.ops);
  health = as(roles.health);
  retention = as(roles.retention);
});
afterAll(async () => {
  await Promise.all([worker, relay, ops, health, retention].map((sql) => sql?.end({ timeout: 1 })));
  for (const role of Object.values(roles)) {
    await db.sql.unsafe(`drop owned by "${role}"`).catch(() => {});
    await db.sql.unsafe(`drop role if exists "${role}"`);
  }
});

/** The SQLSTATE a statement fails with, or 'allowed'. */
const outcome = (query: Promise<unknown>) =>
  query.then(
    () => 'allowed',
    (error: { code?: string; message?: string }) => error.code ?? error.message,
  );

const INSUFFICIENT_PRIVILEGE = '42501';

describe('Function: provisionRoles() — what each role may NOT do', () => {
  it.each([
    ['delete from ops_audit', 'delete from ops_audit'],
    ['update schema_migrations', `update schema_migrations set name = 'rewritten'`],
    [
      'insert into schema_migrations',
      `insert into schema_migrations (migration_id, name) values (9999, 'x')`,
    ],
    ['read the audit trail', 'select * from ops_audit'],
    ['write the audit trail', `insert into ops_audit (action, outcome) values ('forged', 'DONE')`],
    ['mark an outbox row published', `update outbox_events set status = 'PUBLISHED'`],
    ['delete outbox rows', 'delete from outbox_events'],
    ['read outbox envelopes', 'select envelope from outbox_events'],
    ['truncate the inbox', 'truncate worker_inbox'],
    ['create a table', 'create table worker_owned (id int)'],
  ])('the worker cannot %s', async (_what, statement) => {
    expect(await outcome(worker.unsafe(statement))).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it.each([
    ['read the inbox', 'select * from worker_inbox'],
    ['write the inbox', `delete from worker_inbox`],
    ['read the quarantine', 'select * from worker_quarantine'],
    ['touch a domain table', 'select * from cases'],
    ['read the effect log', 'select * from external_effect_log'],
    ['read the audit trail', 'select * from ops_audit'],
    ['insert outbox rows', `insert into outbox_events (event_id) values ('x')`],
    ['delete outbox rows', 'delete from outbox_events'],
    ['rewrite an envelope', `update outbox_events set envelope = '{}'`],
    ['update schema_migrations', `update schema_migrations set name = 'rewritten'`],
  ])('the relay cannot %s', async (_what, statement) => {
    expect(await outcome(relay.unsafe(statement))).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it.each([
    ['delete from ops_audit', 'delete from ops_audit'],
    ['rewrite who did what in ops_audit', `update ops_audit set actor = 'someone-else'`],
    ['update schema_migrations', `update schema_migrations set name = 'rewritten'`],
    ['touch a domain table', 'select * from cases'],
    ['read the outbox', 'select * from outbox_events'],
    ['insert inbox rows', `insert into worker_inbox (consumer) values ('x')`],
    ['rewrite an inbox request hash', `update worker_inbox set request_hash = repeat('0', 64)`],
    ['rewrite a quarantined body', `update worker_quarantine set body = 'forged'`],
    ['truncate the inbox', 'truncate worker_inbox'],
  ])('the ops role cannot %s', async (_what, statement) => {
    expect(await outcome(ops.unsafe(statement))).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it.each([
    ['read a quarantined body', 'select body from worker_quarantine'],
    ['read an outbox envelope', 'select envelope from outbox_events'],
    ['read an inbox failure message', 'select failure_message from worker_inbox'],
    ['update the inbox', `update worker_inbox set status = 'COMPLETED'`],
    ['delete inbox rows', 'delete from worker_inbox'],
    ['touch a domain table', 'select * from cases'],
    ['read the effect log', 'select * from external_effect_log'],
    ['read the audit trail', 'select * from ops_audit'],
  ])('the health role cannot %s', async (_what, statement) => {
    expect(await outcome(health.unsafe(statement))).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it.each([
    ['read a quarantined body', 'select body from worker_quarantine'],
    ['read an outbox envelope', 'select envelope from outbox_events'],
    ['rewrite an inbox status', `update worker_inbox set status = 'COMPLETED'`],
    ['insert inbox rows', `insert into worker_inbox (consumer) values ('x')`],
    ['touch a domain table beyond the effect references', 'select * from case_notifications'],
    ['read the audit trail', 'select * from ops_audit'],
    ['truncate the inbox', 'truncate worker_inbox'],
  ])('the retention role cannot %s', async (_what, statement) => {
    expect(await outcome(retention.unsafe(statement))).toBe(INSUFFICIENT_PRIVILEGE);
  });
});

describe('Function: provisionRoles() — what each role does still works', () => {
  it('the retention role purges every table, keeping the effect-log rows a domain row references', async () => {
    // Prepare: a settled effect referenced by a notification, one not referenced, an old published outbox row.
    const tag = randomUUID().slice(0, 8);
    const old = new Date(Date.now() - 40 * 86_400_000);
    for (const key of ['kept', 'gone']) {
      await db.sql`
        insert into external_effect_log (effect_key, provider, operation, status, request_hash, provider_key, updated_at)
        values (${`${tag}/${key}`}, 'notify', 'send', 'COMPLETED', ${'d'.repeat(64)}, ${`${tag}/${key}`}, ${old})
      `;
    }
    await db.sql`insert into cases (case_id, stage, version) values (${`${tag}-case`}, 'NEW', 1)`;
    await db.sql`
      insert into case_notifications (source_event_id, case_id, recipient, effect_key, provider_reference)
      values (${`${tag}-n`}, ${`${tag}-case`}, 'someone', ${`${tag}/kept`}, 'ref')
    `;
    await db.sql`
      insert into outbox_events (event_id, idempotency_key, message_type, schema_version, aggregate_type,
        aggregate_id, request_hash, envelope, status, published_at)
      values (${tag}, ${tag}, 'CaseStageChanged', 1, 'case', 'C', ${'d'.repeat(64)}, '{}'::jsonb, 'PUBLISHED', ${old})
    `;

    // Act
    const result = await purgeRetention(retention, {
      consumer: `retention-${tag}`,
      retentions: { sourceRetentionSeconds: 4 * 86_400, dlqRetentionSeconds: 14 * 86_400 },
      inboxSeconds: 20 * 86_400,
      outboxSeconds: 7 * 86_400,
      effectLogSeconds: 20 * 86_400,
      quarantineSeconds: 30 * 86_400,
      deadline: Date.now() + 10_000,
    });

    // Assess
    expect(result.removed.outbox).toBeGreaterThanOrEqual(1);
    expect(result.removed.effectLog).toBeGreaterThanOrEqual(1);
    const left = await db.sql`select effect_key from external_effect_log where effect_key like ${`${tag}/%`}`;
    expect(left.map((row) => row.effect_key)).toEqual([`${tag}/kept`]);
  });

  it("the health role reads every figure, including the age of the worker role's open transaction", async () => {
    // Prepare: the worker role holds an inbox transaction open (a claim in flight).
    const key = `health-role:${randomUUID()}`;
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let claimed = () => {};
    const isClaimed = new Promise<void>((resolve) => {
      claimed = resolve;
    });
    const holding = worker.begin(async (tx) => {
      await tx`
        insert into worker_inbox (consumer, idempotency_key, message_type, schema_version, aggregate_type,
          aggregate_id, status, request_hash, started_at)
        values ('health-role', ${key}, 'PaymentCaptured', 1, 'payment', 'PAY-1', 'PROCESSING', ${'c'.repeat(64)}, now())
      `;
      claimed();
      await released;
    });
    await isClaimed;
    await new Promise((resolve) => setTimeout(resolve, 300));

    // Act
    const figures = await collectHealth(health, { consumer: 'health-role', longTransactionMs: 200 });
    release();
    await holding;

    // Assess
    expect(figures.inbox.oldestInFlightAgeMs).toBeGreaterThanOrEqual(250);
    expect(figures.longTransactions.count).toBe(1);
    const [row] = await db.sql<
      { member: boolean }[]
    >`select pg_has_role(${roles.health}, 'pg_monitor', 'member') as member`;
    expect(row?.member).toBe(true);
    // The ops commands read the same sessions (`health`, `smoke`).
    const [ops] = await db.sql<
      { member: boolean }[]
    >`select pg_has_role(${roles.ops}, 'pg_monitor', 'member') as member`;
    expect(ops?.member).toBe(true);
  });

  it('the worker processes messages (inbox, domain tables, quarantine) and writes the effect log', async () => {
    // Prepare: a stage change, a payment, and a body that is not an envelope (terminal: quarantined).
    const caseId = `CASE-${randomUUID()}`;
    const records = [
      sqsRecordFactory(caseStageEnvelope(caseId, 1)),
      sqsRecordFactory(envelopeFactory()),
      sqsRecordFactory('not an envelope'),
    ];
    const handler = exampleWorker(worker);

    // Act
    const response = await handler(sqsEvent(records), lambdaContext());
    const effect = await performExternalEffect({
      sql: worker,
      effectKey: `test:${caseId}`,
      provider: 'test',
      operation: 'notify',
      request: { caseId },
      call: async () => ({ reference: 'ref-1' }),
    });

    // Assess: every record settled as the superuser sees it.
    expect(response).toEqual({ batchItemFailures: [] });
    const [row] = await db.sql`select stage, version from cases where case_id = ${caseId}`;
    expect(row).toEqual({ stage: 'INVESTIGATION', version: 1 });
    const [inbox] = await db.sql<{ count: number }[]>`
      select count(*)::int as count from worker_inbox where status = 'COMPLETED' and consumer = 'case-worker'
    `;
    expect(inbox?.count).toBe(2);
    const [quarantined] = await db.sql<{ count: number }[]>`
      select count(*)::int as count from worker_quarantine where body = 'not an envelope'
    `;
    expect(quarantined?.count).toBe(1);
    expect(effect).toEqual({ reference: 'ref-1', replayed: false, attempts: 1 });
  });

  it('the worker enqueues outbox rows in its transaction and sees a duplicate as one', async () => {
    // Prepare
    const envelope = caseStageEnvelope(`CASE-${randomUUID()}`, 1);

    // Act
    const first = await worker.begin((sql) => enqueueOutbox(sql, envelope));
    const again = await worker.begin((sql) => enqueueOutbox(sql, envelope));

    // Assess
    expect(first).toMatchObject({ eventId: envelope.messageId, inserted: true });
    expect(again).toEqual({ eventId: envelope.messageId, inserted: false, traceId: first.traceId });
  });

  it('the relay publishes outbox rows and marks them PUBLISHED', async () => {
    // Prepare: a row the worker enqueued, and an SQS stand-in that accepts every entry.
    const envelope = caseStageEnvelope(`CASE-${randomUUID()}`, 1);
    await worker.begin((sql) => enqueueOutbox(sql, envelope));
    const sqs = {
      async send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
        const entries = command.input.Entries ?? [];
        return {
          Successful: entries.map((entry) => ({
            Id: entry.Id,
            MessageId: randomUUID(),
            MD5OfMessageBody: '',
          })),
          Failed: [],
          $metadata: {},
        } as SendMessageBatchCommandOutput;
      },
    };

    // Act
    const result = await relayOutbox({
      sql: relay,
      sqs,
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/000000000000/worker',
      deadline: Date.now() + 10_000,
    });

    // Assess
    expect(result.published).toBeGreaterThanOrEqual(1);
    const [row] = await db.sql`select status from outbox_events where event_id = ${envelope.messageId}`;
    expect(row).toEqual({ status: 'PUBLISHED' });
  });

  it('the ops role rearms, purges and releases, keeping an audit trail it cannot rewrite', async () => {
    // Prepare: a terminally failed inbox row, a completed one 30 days old, and a quarantined message.
    const { consumer, failedKey, quarantineId } = await seedOpsState(db.sql);

    // Act: the statements of `dlq redrive --rearm`, `inbox purge` and `quarantine release`.
    const auditId = await recordAudit(ops, { action: 'test_rearm', outcome: 'STARTED', consumer });
    const rearmed = await rearmInbox(ops, { consumer, idempotencyKey: failedKey });
    await finishAudit(ops, auditId, { outcome: 'DONE', detail: { rearmed: rearmed.rearmed } });
    const purged = await inboxPurge(
      { sql: ops, out: createMemoryOutput(), clock: systemClock },
      {
        consumer,
        olderThanSeconds: 20 * 86_400,
        sourceRetentionSeconds: 4 * 86_400,
        dlqRetentionSeconds: 14 * 86_400,
      },
    );
    const released = await ops.begin(async (tx) => {
      await tx`select quarantine_id from worker_quarantine where quarantine_id = ${quarantineId ?? ''} for update`;
      return tx`
        update worker_quarantine set released_at = now(), released_message_id = 'm-1'
        where quarantine_id = ${quarantineId ?? ''}
      `;
    });

    // Assess
    expect(rearmed).toMatchObject({ previousStatus: 'FAILED_TERMINAL', rearmed: true });
    expect(purged.deleted).toBe(1);
    expect(released.count).toBe(1);
    const audit = await db.sql`
      select action, outcome from ops_audit where consumer = ${consumer} order by audit_id
    `;
    expect(audit).toEqual([
      { action: 'test_rearm', outcome: 'DONE' },
      { action: 'inbox_purge', outcome: 'DONE' },
    ]);
  });
});

describe('Function: runOpsCommand() — as the wrong database user', () => {
  it('exits 2 and names the ops user when the worker user runs an audited command', async () => {
    // Prepare: DATABASE_URL with the worker's user, and an action that writes the audit trail as every
    // destructive command does.
    const url = new URL(db.url);
    url.username = roles.worker;
    url.password = PASSWORD;
    const stderr = new PassThrough();
    let written = '';
    stderr.on('data', (chunk: Buffer) => {
      written += chunk.toString('utf8');
    });

    // Act
    const exitCode = await runOpsCommand(
      'inbox purge',
      { databaseUrl: url.toString() },
      (session) => {
        const audit = session.store.auditTrail();
        if (!audit) throw new Error('the PostgreSQL store of a configured database keeps an audit trail');
        return audit.record({ action: 'inbox_purge', outcome: 'DONE' });
      },
      { stdout: new PassThrough(), stderr },
    );

    // Assess
    expect(exitCode).toBe(2);
    expect(written).toContain('permission denied for table ops_audit');
    expect(written).toContain(
      'Connect as the ops database user (sqs_worker_ops unless the stack sets opsDbUser)',
    );
    expect(written).not.toContain(PASSWORD);
  });
});

describe('Function: provisionRoles() — timeouts', () => {
  it("gives the worker's and the relay's sessions the configured statement and lock timeouts and the client check, and ops none", async () => {
    // Act: a later deploy with other values.
    await provisionRoles(db.sql, roles, { statementTimeoutMs: 12_000, lockTimeoutMs: 3000 });
    const settings = async (role: string) => {
      const session = db.client({ max: 1, username: role, password: PASSWORD });
      const [row] = await session`
        select current_setting('statement_timeout') as statement, current_setting('lock_timeout') as lock,
               current_setting('client_connection_check_interval') as "clientCheck"
      `;
      await session.end({ timeout: 1 });
      return row;
    };

    // Assess: every new session of the role starts with them, without a statement of its own.
    expect(await settings(roles.worker)).toEqual({ statement: '12s', lock: '3s', clientCheck: '1s' });
    expect(await settings(roles.relay)).toEqual({ statement: '12s', lock: '3s', clientCheck: '1s' });
    expect(await settings(roles.ops)).toEqual({ statement: '0', lock: '0', clientCheck: '0' });
  });

  it('ends a worker session whose client is gone while it waits for a lock, releasing what it held, long before lock_timeout', async () => {
    // Prepare: another transaction holds a row; the worker's role (lock_timeout 20 s) waits for it through a TCP
    // proxy, holding a row of its own.
    await provisionRoles(db.sql, roles, { statementTimeoutMs: 30_000, lockTimeoutMs: 20_000 });
    await db.sql`create table if not exists role_test_rows (id int primary key, v int not null)`;
    await db.sql`grant select, update on role_test_rows to ${db.sql(roles.worker)}`;
    await db.sql`insert into role_test_rows values (1, 0), (2, 0) on conflict do nothing`;
    const holder = await db.sql.reserve();
    await holder`begin`;
    await holder`select * from role_test_rows where id = 1 for update`;
    const target = new URL(db.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const victim = db.client({ max: 1, username: roles.worker, password: PASSWORD, port: proxy.port });
    // Plain statements on one connection (no sql.begin, whose rollback would be written to the cut socket).
    await victim`begin`;
    await victim`update role_test_rows set v = v + 1 where id = 2`;
    const waiting = victim`update role_test_rows set v = v + 1 where id = 1`.catch((error: unknown) => error);
    let pid = 0;
    await waitFor(
      "the worker's session waiting for the row lock",
      async () => {
        const [row] = await db.sql<{ pid: number }[]>`
          select pid from pg_stat_activity where usename = ${roles.worker} and wait_event_type = 'Lock'`;
        pid = row?.pid ?? 0;
        return pid !== 0;
      },
      10_000,
    );

    // Act: the client vanishes (a Lambda timed out, a poller exited at once).
    const cutAt = Date.now();
    proxy.down();
    const goneAt = await waitFor(
      'the session to end',
      async () => (await db.sql`select 1 from pg_stat_activity where pid = ${pid}`).length === 0,
      19_000,
    );
    const goneAfterMs = goneAt - cutAt;

    // Assess: the session ended well before its 20 s lock_timeout, its update of row 2 rolled back and the row
    // free (a NOWAIT lock succeeds).
    expect(goneAfterMs).toBeLessThan(10_000);
    const [row2] = await db.sql`select v from role_test_rows where id = 2 for update nowait`;
    expect(row2).toEqual({ v: 0 });
    await holder`rollback`;
    holder.release();
    await waiting;
    await victim.end({ timeout: 0 }).catch(() => {});
    await proxy.close();
  });

  it('reads the timeouts from the environment, with defaults, naming a bad value and its range', () => {
    expect(roleTimeoutsFromEnvironment({})).toEqual({ statementTimeoutMs: 15_000, lockTimeoutMs: 5000 });
    expect(
      roleTimeoutsFromEnvironment({ DB_STATEMENT_TIMEOUT_MS: '20000', DB_LOCK_TIMEOUT_MS: '2000' }),
    ).toEqual({ statementTimeoutMs: 20_000, lockTimeoutMs: 2000 });
    expect(() => roleTimeoutsFromEnvironment({ DB_LOCK_TIMEOUT_MS: '5s' })).toThrow(
      'DB_LOCK_TIMEOUT_MS must be a whole number of milliseconds from 1 to 600000 (given "5s")',
    );
    expect(() => roleTimeoutsFromEnvironment({ DB_STATEMENT_TIMEOUT_MS: '1000' })).toThrow(
      'DB_LOCK_TIMEOUT_MS (5000) must not exceed DB_STATEMENT_TIMEOUT_MS (1000)',
    );
  });
});

describe('Function: provisionRoles() — tables added by later migrations', () => {
  it('gives the worker a new domain table on the next run, and nobody else', async () => {
    // Prepare: a migration adds a domain table with a serial key.
    await db.sql`create table role_test_notes (note_id serial primary key, body text not null)`;

    // Act
    await provisionRoles(db.sql, roles);

    // Assess
    expect(await outcome(worker`insert into role_test_notes (body) values ('hello')`)).toBe('allowed');
    expect(await outcome(relay`select * from role_test_notes`)).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await outcome(ops`select * from role_test_notes`)).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it('refuses two functions sharing one role', async () => {
    await expect(provisionRoles(db.sql, { worker: 'shared_role', relay: 'shared_role' })).rejects.toThrow(
      'RELAY_DB_USER and WORKER_DB_USER are both "shared_role": give each function its own database role',
    );
  });
});
