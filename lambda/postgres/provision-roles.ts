import type postgres from 'postgres';
import { ConfigError } from '../errors.ts';
import { effectLogReferences } from '../retention/purge-retention.ts';

/** The database login roles of one deployment, one per function; an unset role is not provisioned. */
export interface DatabaseRoles {
  /** `WORKER_DB_USER`: the SQS worker (inbox, quarantine, effect log, domain tables, new outbox rows). */
  readonly worker?: string | undefined;
  /** `RELAY_DB_USER`: the outbox relay (reads and marks outbox rows, nothing else). */
  readonly relay?: string | undefined;
  /** `OPS_DB_USER`: the `sqs-worker` ops CLI (purge, rearm, release, audit trail). */
  readonly ops?: string | undefined;
  /** `HEALTH_DB_USER`: the scheduled health job (reads counts and ages, and the lock and activity views). */
  readonly health?: string | undefined;
  /** `RETENTION_DB_USER`: the scheduled retention job (deletes settled rows past their retention). */
  readonly retention?: string | undefined;
}

/** Which function a role belongs to. */
export type RoleFunction = keyof DatabaseRoles;

/** A grant on one of the toolkit's own tables: SQL privilege list, column lists allowed (constants only). */
interface TableGrant {
  readonly table: string;
  readonly privileges: string;
}

/**
 * What each function may do on the toolkit's own tables. Nobody but the migration user (the owner) may write
 * `schema_migrations`, delete from `ops_audit`, or truncate anything; grants are per table, never `all`.
 *
 * - The worker writes the inbox, the quarantine and the external-effect log, and may INSERT outbox rows (a
 *   handler that publishes an event calls `enqueueOutbox` in its own transaction); reading the outbox is
 *   limited to the columns `enqueueOutbox` needs to report a conflicting duplicate. It cannot mark a row
 *   published, delete one, or read the audit trail.
 * - The relay reads the outbox and updates its delivery columns (lease, attempts, status, error); it cannot
 *   rewrite an envelope or touch any other table.
 * - The ops CLI reads the inbox and the quarantine, deletes and rearms inbox rows (`inbox purge`, `dlq
 *   redrive --rearm`: status and attempts only; `inbox cancel`: status and failure columns, and the cancelled-key
 *   markers), marks quarantined messages released (and the key an edited release went out as), and appends to the audit
 *   trail: it may finish an audit row it started (outcome, new message id, detail, finished at), never change
 *   who did what or delete one. It is a member of `pg_monitor`, as the health job is, for `health` and `smoke`.
 * - The retention job deletes settled rows: it reads the key, status and timestamp columns its predicates use
 *   (never a payload), and holds UPDATE on one timestamp column per table only because `select … for update
 *   skip locked` requires it (the worst that column could do is delay the row's own purge). It also reads the
 *   columns of domain tables that reference `external_effect_log` (below), to keep the rows still in use.
 * - The health job reads only the columns its counts and ages need (status, consumer, timestamps): never a
 *   payload, a quarantined body or an envelope, and it writes nothing. It is also made a member of `pg_monitor`
 *   (below) so it sees the age of other roles' transactions in `pg_stat_activity`.
 *
 * Column lists keep `select … for update` working (it needs UPDATE on one column) while the rest stays read-only.
 *
 * Tables that are not listed here (and are not `schema_migrations`) are domain tables: the worker gets
 * select, insert, update and delete on them and on the sequences they own; the relay and ops get nothing.
 * A toolkit table added by a later migration must be added here, or the worker gets domain access to it.
 */
export const TOOLKIT_GRANTS: Readonly<Record<RoleFunction, readonly TableGrant[]>> = {
  worker: [
    { table: 'worker_inbox', privileges: 'select, insert, update, delete' },
    { table: 'worker_quarantine', privileges: 'select, insert, update' },
    { table: 'external_effect_log', privileges: 'select, insert, update' },
    // Read by the claims and by migration 00013's COMMIT triggers: a cancelled key is never applied.
    { table: 'worker_cancelled_keys', privileges: 'select' },
    {
      table: 'outbox_events',
      privileges: 'insert, select (event_id, idempotency_key, request_hash, trace_header)',
    },
  ],
  relay: [
    {
      table: 'outbox_events',
      privileges:
        'select, update (status, attempts, next_attempt_at, locked_until, locked_by, last_error, sqs_message_id, published_at)',
    },
  ],
  ops: [
    {
      table: 'worker_inbox',
      privileges: 'select, update (status, receive_count, failed_at, failure_code, failure_message), delete',
    },
    {
      table: 'worker_quarantine',
      privileges: 'select, update (released_at, released_message_id, released_as_key)',
    },
    { table: 'worker_cancelled_keys', privileges: 'select, insert, delete' },
    {
      table: 'ops_audit',
      privileges: 'select, insert, update (outcome, new_message_id, detail, finished_at)',
    },
  ],
  health: [
    {
      table: 'worker_inbox',
      privileges: 'select (consumer, status, first_seen_at, last_seen_at, started_at)',
    },
    { table: 'worker_quarantine', privileges: 'select (consumer, first_quarantined_at, released_at)' },
    { table: 'outbox_events', privileges: 'select (status, created_at)' },
  ],
  retention: [
    {
      table: 'worker_inbox',
      privileges:
        'select (consumer, idempotency_key, status, completed_at, last_seen_at), update (last_seen_at), delete',
    },
    {
      table: 'outbox_events',
      privileges: 'select (event_id, status, published_at), update (published_at), delete',
    },
    {
      table: 'external_effect_log',
      privileges: 'select (effect_key, status, updated_at), update (updated_at), delete',
    },
    {
      table: 'worker_quarantine',
      privileges: 'select (quarantine_id, consumer, released_at), update (last_quarantined_at), delete',
    },
  ],
};

/** Tables of the toolkit itself: never treated as domain tables (`sqs-worker smoke` checks the worker's grants by it). */
export const TOOLKIT_TABLES: ReadonlySet<string> = new Set([
  'schema_migrations',
  ...Object.values(TOOLKIT_GRANTS).flatMap((grants) => grants.map((grant) => grant.table)),
]);

const VARIABLE: Readonly<Record<RoleFunction, string>> = {
  worker: 'WORKER_DB_USER',
  relay: 'RELAY_DB_USER',
  ops: 'OPS_DB_USER',
  health: 'HEALTH_DB_USER',
  retention: 'RETENTION_DB_USER',
};

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The roles an environment names, one variable per function (`WORKER_DB_USER`, `RELAY_DB_USER`, `OPS_DB_USER`,
 * `HEALTH_DB_USER`, `RETENTION_DB_USER`); an unset or empty one is not provisioned. Read through the one mapping
 * {@link checkRoleNames} names them by, so a function's variable cannot be left out of the migration function.
 */
export function rolesFromEnvironment(env: Record<string, string | undefined>): DatabaseRoles {
  return Object.fromEntries(
    (Object.entries(VARIABLE) as [RoleFunction, string][]).map(([fn, variable]) => [
      fn,
      env[variable] || undefined,
    ]),
  ) as DatabaseRoles;
}

/**
 * Server-side timeouts of the worker's and the relay's sessions, in milliseconds: set as the roles' defaults in the
 * deployment's database, so every connection starts with them and no statement on the message path has to set
 * them (`SET` and `set_config` pin a connection to RDS Proxy).
 */
export interface RoleTimeouts {
  /** `statement_timeout`: the longest any one statement may run. @default 15000 */
  readonly statementTimeoutMs: number;
  /** `lock_timeout`: the longest a statement waits for a row or table lock (a domain row held elsewhere). @default 5000 */
  readonly lockTimeoutMs: number;
}

/** The defaults of {@link RoleTimeouts}. */
export const DEFAULT_ROLE_TIMEOUTS: RoleTimeouts = { statementTimeoutMs: 15_000, lockTimeoutMs: 5000 };

/**
 * `client_connection_check_interval` of the worker's and the relay's sessions, in milliseconds: while a statement
 * runs or waits for a lock, the server checks this often that its client is still there, and ends the session
 * (rolling its transaction back, releasing its row locks) once the client is gone — a Lambda that timed out, a
 * poller that exited at once, a connection cut. Without it, a session whose client vanished holds its locks until
 * its statement ends (up to `lock_timeout` / `statement_timeout`), and every redelivery of a message that needs
 * those rows meets them. The check is a cheap poll of the socket, made only while a statement runs
 * (PostgreSQL 14+; skipped on an older server).
 *
 * @internal
 */
export const CLIENT_CONNECTION_CHECK_INTERVAL_MS = 1000;

/** Functions whose roles get {@link RoleTimeouts}: the ones that run per message. Ops commands may run long. */
const TIMED_FUNCTIONS: ReadonlySet<RoleFunction> = new Set(['worker', 'relay']);

const TIMEOUT_LIMITS = {
  statementTimeoutMs: { variable: 'DB_STATEMENT_TIMEOUT_MS', max: 900_000 },
  lockTimeoutMs: { variable: 'DB_LOCK_TIMEOUT_MS', max: 600_000 },
} as const;

/**
 * Reads {@link RoleTimeouts} from `DB_STATEMENT_TIMEOUT_MS` and `DB_LOCK_TIMEOUT_MS` (the migration function's
 * environment), defaults for the unset ones.
 *
 * @throws ConfigError naming the variable, the value and the valid range.
 */
export function roleTimeoutsFromEnvironment(env: Record<string, string | undefined>): RoleTimeouts {
  const problems: string[] = [];
  const read = (field: keyof RoleTimeouts): number => {
    const { variable, max } = TIMEOUT_LIMITS[field];
    const value = env[variable];
    if (value === undefined || value === '') return DEFAULT_ROLE_TIMEOUTS[field];
    const parsed = Number(value);
    if (!/^[0-9]+$/.test(value) || parsed < 1 || parsed > max) {
      problems.push(`${variable} must be a whole number of milliseconds from 1 to ${max} (given "${value}")`);
    }
    return parsed;
  };
  const timeouts = { statementTimeoutMs: read('statementTimeoutMs'), lockTimeoutMs: read('lockTimeoutMs') };
  if (problems.length === 0 && timeouts.lockTimeoutMs > timeouts.statementTimeoutMs) {
    problems.push(
      `DB_LOCK_TIMEOUT_MS (${timeouts.lockTimeoutMs}) must not exceed DB_STATEMENT_TIMEOUT_MS (${timeouts.statementTimeoutMs}): a lock wait is part of a statement; lower the lock timeout`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  return timeouts;
}

/**
 * Sets `statement_timeout`, `lock_timeout` and `client_connection_check_interval`
 * ({@link CLIENT_CONNECTION_CHECK_INTERVAL_MS}, on PostgreSQL 14 and later) as defaults of `role` in `database` only
 * (`alter role … in database … set`): they apply to every session the role opens there from then on, direct or
 * through RDS Proxy (the proxy signs in as the same user), and to no other database.
 *
 * @internal
 */
export async function setRoleTimeouts(
  sql: postgres.Sql | postgres.TransactionSql,
  role: string,
  database: string,
  timeouts: RoleTimeouts,
): Promise<void> {
  for (const [setting, value] of [
    ['statement_timeout', timeouts.statementTimeoutMs],
    ['lock_timeout', timeouts.lockTimeoutMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new ConfigError(`${setting} must be a whole number of milliseconds above 0 (given ${value})`);
    }
    // ALTER ROLE takes no bound parameters; the name is a constant and the value a checked integer (milliseconds).
    await sql`alter role ${sql(role)} in database ${sql(database)} set ${sql.unsafe(setting)} = ${sql.unsafe(String(value))}`;
  }
  const [known] = await sql`select 1 from pg_settings where name = 'client_connection_check_interval'`;
  if (known) {
    await sql`alter role ${sql(role)} in database ${sql(database)} set client_connection_check_interval = ${sql.unsafe(String(CLIENT_CONNECTION_CHECK_INTERVAL_MS))}`;
  }
}

/**
 * Checks the role names: lowercase SQL identifiers, one distinct role per function.
 *
 * @throws ConfigError naming the variable, the value and the fix.
 */
export function checkRoleNames(roles: DatabaseRoles): void {
  const problems: string[] = [];
  const seen = new Map<string, RoleFunction>();
  for (const [fn, role] of Object.entries(roles) as [RoleFunction, string | undefined][]) {
    if (role === undefined) continue;
    if (!IDENTIFIER.test(role)) {
      problems.push(`${VARIABLE[fn]} must be a lowercase SQL identifier (given "${role}")`);
      continue;
    }
    const other = seen.get(role);
    if (other) {
      problems.push(
        `${VARIABLE[fn]} and ${VARIABLE[other]} are both "${role}": give each function its own database role`,
      );
    }
    seen.set(role, fn);
  }
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
}

/**
 * Creates the login role of each function if missing, lets it authenticate with IAM (`rds_iam`, present on
 * RDS only), and sets its privileges to exactly {@link TOOLKIT_GRANTS} plus the domain tables (worker).
 *
 * A reconcile, not an addition: each role first loses every table and sequence privilege in `public` (and the
 * default privileges earlier versions granted), then gets its own, all in ONE transaction, so a running
 * function never sees a moment without them and a narrowed grant takes effect on the next deploy. Idempotent;
 * the migration function runs it after every migration run. The roles have no password and no CREATE. The
 * worker's and the relay's roles also get {@link RoleTimeouts} as their defaults in this database.
 *
 * @throws ConfigError when a role name is invalid or two functions share one.
 */
export async function provisionRoles(
  sql: postgres.Sql,
  roles: DatabaseRoles,
  timeouts: RoleTimeouts = DEFAULT_ROLE_TIMEOUTS,
): Promise<void> {
  checkRoleNames(roles);
  const entries = (Object.entries(roles) as [RoleFunction, string | undefined][]).filter(
    (entry): entry is [RoleFunction, string] => entry[1] !== undefined,
  );
  if (entries.length === 0) return;
  await sql.begin(async (tx) => {
    const [{ database } = { database: '' }] = await tx<{ database: string }[]>`
      select current_database() as database
    `;
    const tables = await tx<{ name: string }[]>`
      select tablename as name from pg_tables where schemaname = 'public' order by tablename
    `;
    const sequences = await tx<{ name: string; owner: string | null }[]>`
      select s.relname as name, t.relname as owner
        from pg_class s
        join pg_namespace n on n.oid = s.relnamespace
        left join pg_depend d
          on d.classid = 'pg_class'::regclass and d.objid = s.oid
         and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
        left join pg_class t on t.oid = d.refobjid
       where s.relkind = 'S' and n.nspname = 'public'
    `;
    const domainTables = tables.map((t) => t.name).filter((name) => !TOOLKIT_TABLES.has(name));
    const domainSequences = sequences
      .filter((s) => s.owner === null || !TOOLKIT_TABLES.has(s.owner))
      .map((s) => s.name);
    const [rdsIam] = await tx`select 1 as found from pg_roles where rolname = 'rds_iam'`;

    for (const [fn, role] of entries) {
      const [existing] = await tx`select 1 as found from pg_roles where rolname = ${role}`;
      if (!existing) await tx`create role ${tx(role)} with login`;
      if (rdsIam) await tx`grant rds_iam to ${tx(role)}`;
      await tx`grant connect on database ${tx(database)} to ${tx(role)}`;
      await tx`grant usage on schema public to ${tx(role)}`;
      if (TIMED_FUNCTIONS.has(fn)) await setRoleTimeouts(tx, role, database, timeouts);

      await tx`revoke all on all tables in schema public from ${tx(role)}`;
      await tx`revoke all on all sequences in schema public from ${tx(role)}`;
      await tx`alter default privileges in schema public revoke all on tables from ${tx(role)}`;
      await tx`alter default privileges in schema public revoke all on sequences from ${tx(role)}`;

      for (const grant of TOOLKIT_GRANTS[fn]) {
        if (!tables.some((t) => t.name === grant.table)) continue;
        // The privilege list (with its column lists) is a constant of this file; the names are identifiers.
        await tx`grant ${tx.unsafe(grant.privileges)} on table ${tx(grant.table)} to ${tx(role)}`;
      }
      // The ages of other roles' transactions in pg_stat_activity are hidden without pg_read_all_stats; the
      // predefined pg_monitor role grants it (and reading the statistics views) and nothing that writes. The ops
      // commands read the same sessions (`health`, `smoke`'s look at the worker's sessions).
      if (fn === 'health' || fn === 'ops') await tx`grant pg_monitor to ${tx(role)}`;
      if (fn === 'retention') {
        for (const reference of await effectLogReferences(tx)) {
          await tx`grant select (${tx(reference.column)}) on table ${tx(reference.table)} to ${tx(role)}`;
        }
      }
      if (fn === 'worker') {
        for (const table of domainTables) {
          await tx`grant select, insert, update, delete on table ${tx(table)} to ${tx(role)}`;
        }
        for (const sequence of domainSequences) {
          await tx`grant usage, select on sequence ${tx(sequence)} to ${tx(role)}`;
        }
      }
    }
  });
}
