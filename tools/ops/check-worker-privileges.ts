import type postgres from 'postgres';
import { TOOLKIT_GRANTS, TOOLKIT_TABLES } from '../../lambda/postgres/provision-roles.ts';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';

/** Privileges a table grant may hold; MAINTAIN exists from PostgreSQL 17. */
const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'];
/** Privileges that may also be granted on columns. */
const COLUMN_PRIVILEGES = new Set(['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']);
/** Roles the worker's role may be a member of: RDS's IAM authentication role. */
const ALLOWED_MEMBERSHIPS = new Set(['rds_iam']);

/** What a role may do on one table: whole-table privileges, and privileges on some columns only. */
interface TableAccess {
  readonly table: Set<string>;
  readonly columns: Map<string, Set<string>>;
}

/**
 * Parses a grant of `TOOLKIT_GRANTS` (`'insert, select (event_id, request_hash)'`) into whole-table privileges and
 * privileges on columns.
 *
 * @internal
 */
export function parseGrant(privileges: string): TableAccess {
  const access: TableAccess = { table: new Set(), columns: new Map() };
  for (const match of privileges.matchAll(/([a-z]+)\s*(?:\(([^)]*)\))?/g)) {
    const privilege = (match[1] as string).toUpperCase();
    if (match[2] === undefined) access.table.add(privilege);
    else access.columns.set(privilege, new Set(match[2].split(',').map((column) => column.trim())));
  }
  return access;
}

/** The worker's expected access to each table of the schema: TOOLKIT_GRANTS, and the domain tables in full. */
function expectedAccess(tables: readonly string[]): Map<string, TableAccess> {
  const expected = new Map<string, TableAccess>();
  for (const table of tables) {
    const grant = TOOLKIT_GRANTS.worker.find((g) => g.table === table);
    if (grant) expected.set(table, parseGrant(grant.privileges));
    else if (!TOOLKIT_TABLES.has(table)) expected.set(table, parseGrant('select, insert, update, delete'));
    else expected.set(table, { table: new Set(), columns: new Map() });
  }
  return expected;
}

/** Differences of `role`'s effective privileges from the expected ones, as short phrases. */
export interface PrivilegeDifferences {
  readonly extra: readonly string[];
  readonly missing: readonly string[];
}

/**
 * Compares the effective privileges of `role` (has_table_privilege, has_column_privilege, has_sequence_privilege:
 * what it may do, directly, through a membership or as a superuser) with what `provisionRoles` grants the worker:
 * `TOOLKIT_GRANTS.worker` on the toolkit's tables, select/insert/update/delete on the domain tables, usage and
 * select on their sequences, nothing else — no CREATE on the schema, no role attribute, no membership but rds_iam.
 *
 * @internal
 */
export async function workerPrivilegeDifferences(
  sql: postgres.Sql,
  role: string,
): Promise<PrivilegeDifferences> {
  const extra: string[] = [];
  const missing: string[] = [];
  const [attributes] = await sql<
    {
      rolsuper: boolean;
      rolcreaterole: boolean;
      rolcreatedb: boolean;
      rolbypassrls: boolean;
      rolreplication: boolean;
    }[]
  >`select rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication from pg_roles where rolname = ${role}`;
  for (const [attribute, held] of Object.entries(attributes ?? {})) {
    if (held) extra.push(`role attribute ${attribute.replace(/^rol/, '').toUpperCase()}`);
  }
  if (attributes?.rolsuper) return { extra, missing };
  const memberships = await sql<{ rolname: string }[]>`
    select r.rolname from pg_auth_members m join pg_roles r on r.oid = m.roleid
     where m.member = (select oid from pg_roles where rolname = ${role})
  `;
  for (const { rolname } of memberships) {
    if (!ALLOWED_MEMBERSHIPS.has(rolname)) extra.push(`member of ${rolname}`);
  }
  const [schema] = await sql<{ create: boolean }[]>`
    select has_schema_privilege(${role}, 'public', 'CREATE') as create
  `;
  if (schema?.create) extra.push('CREATE on schema public');
  const [{ version } = { version: 0 }] = await sql<{ version: number }[]>`
    select current_setting('server_version_num')::int as version
  `;
  const privileges = version >= 170_000 ? [...TABLE_PRIVILEGES, 'MAINTAIN'] : TABLE_PRIVILEGES;
  const tables = await sql<{ name: string }[]>`
    select tablename as name from pg_tables where schemaname = 'public' order by tablename
  `;
  const expected = expectedAccess(tables.map((t) => t.name));
  for (const { name } of tables) {
    const actual = await actualAccess(sql, role, name, privileges);
    compareTable(name, expected.get(name) as TableAccess, actual, extra, missing);
  }
  await compareSequences(sql, role, extra, missing);
  return { extra, missing };
}

async function actualAccess(
  sql: postgres.Sql,
  role: string,
  table: string,
  privileges: readonly string[],
): Promise<TableAccess> {
  const access: TableAccess = { table: new Set(), columns: new Map() };
  const relation = `public.${table}`;
  for (const privilege of privileges) {
    const [row] = await sql<{ granted: boolean }[]>`
      select has_table_privilege(${role}, ${relation}::regclass, ${privilege}) as granted
    `;
    if (row?.granted) access.table.add(privilege);
    else if (COLUMN_PRIVILEGES.has(privilege)) {
      const columns = await sql<{ name: string }[]>`
        select attname::text as name from pg_attribute
         where attrelid = ${relation}::regclass and attnum > 0 and not attisdropped
           and has_column_privilege(${role}, attrelid, attnum, ${privilege})
      `;
      if (columns.length > 0) access.columns.set(privilege, new Set(columns.map((c) => c.name)));
    }
  }
  return access;
}

function compareTable(
  table: string,
  expected: TableAccess,
  actual: TableAccess,
  extra: string[],
  missing: string[],
): void {
  for (const privilege of actual.table) {
    if (expected.table.has(privilege)) continue;
    const allowed = expected.columns.get(privilege);
    extra.push(`${privilege} on ${table}${allowed ? ` (expected on ${[...allowed].join(', ')} only)` : ''}`);
  }
  for (const privilege of expected.table) {
    if (!actual.table.has(privilege)) missing.push(`${privilege} on ${table}`);
  }
  for (const [privilege, columns] of actual.columns) {
    const allowed = expected.columns.get(privilege) ?? new Set<string>();
    const over = [...columns].filter((column) => !allowed.has(column));
    if (over.length > 0) extra.push(`${privilege} on ${table} (${over.join(', ')})`);
  }
  for (const [privilege, columns] of expected.columns) {
    if (actual.table.has(privilege)) continue;
    const have = actual.columns.get(privilege) ?? new Set<string>();
    const under = [...columns].filter((column) => !have.has(column));
    if (under.length > 0) missing.push(`${privilege} on ${table} (${under.join(', ')})`);
  }
}

async function compareSequences(
  sql: postgres.Sql,
  role: string,
  extra: string[],
  missing: string[],
): Promise<void> {
  // A sequence a domain table owns (serial, identity) or none: the worker gets usage and select on it.
  const sequences = await sql<{ name: string; owner: string | null; privileges: string[] }[]>`
    select s.relname as name, t.relname as owner,
           array_remove(array[
             case when has_sequence_privilege(${role}, s.oid, 'USAGE') then 'USAGE' end,
             case when has_sequence_privilege(${role}, s.oid, 'SELECT') then 'SELECT' end,
             case when has_sequence_privilege(${role}, s.oid, 'UPDATE') then 'UPDATE' end
           ], null) as privileges
      from pg_class s
      join pg_namespace n on n.oid = s.relnamespace
      left join pg_depend d
        on d.classid = 'pg_class'::regclass and d.objid = s.oid
       and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
      left join pg_class t on t.oid = d.refobjid
     where s.relkind = 'S' and n.nspname = 'public'
  `;
  for (const sequence of sequences) {
    const domain = sequence.owner === null || !TOOLKIT_TABLES.has(sequence.owner);
    const expected = domain ? ['USAGE', 'SELECT'] : [];
    for (const privilege of sequence.privileges) {
      if (!expected.includes(privilege)) extra.push(`${privilege} on sequence ${sequence.name}`);
    }
    for (const privilege of expected) {
      if (!sequence.privileges.includes(privilege)) missing.push(`${privilege} on sequence ${sequence.name}`);
    }
  }
}

/** The first `n` items and how many more. */
const some = (items: readonly string[], n = 4) =>
  items.length > n ? `${items.slice(0, n).join('; ')}; and ${items.length - n} more` : items.join('; ');

/** Where the privilege check stands. */
export interface PrivilegeTarget {
  readonly sql: postgres.Sql;
  /** The worker's database user the stack provisions (`workerDbUser`, default sqs_worker). */
  readonly role: string;
  /** The users the worker's sessions were seen logged in as during the run (local sampling), if any. */
  readonly seenUsers: readonly string[];
  /** The local stack: a role that does not exist there is a SKIP, not a FAIL. */
  readonly local: boolean;
}

/**
 * "The worker's role has no more than it needs": {@link workerPrivilegeDifferences} for the stage's worker user.
 * FAIL on any extra (and on a missing privilege, which breaks the worker); locally SKIP when the role does not exist
 * (the local worker then runs as the user of DATABASE_URL).
 *
 * @internal
 */
export async function checkWorkerPrivileges(target: PrivilegeTarget): Promise<SmokeCheck> {
  const name = SMOKE_CHECKS.privileges;
  const { sql, role } = target;
  const [exists] = await sql`select 1 from pg_roles where rolname = ${role}`;
  const others = target.seenUsers.filter((user) => user !== role);
  if (!exists) {
    const detail = `role ${role} does not exist in this database${others.length ? `; the worker's sessions log in as ${others.join(', ')}` : ''}`;
    return target.local
      ? skip(name, `local: ${detail} (the migration function provisions it in AWS)`)
      : fail(name, `${detail}: run the migration function (deploy again), or pass --worker-db-user`);
  }
  if (others.length > 0 && !target.local) {
    return fail(name, `the worker's sessions log in as ${others.join(', ')}, not ${role}`);
  }
  const { extra, missing } = await workerPrivilegeDifferences(sql, role);
  if (extra.length > 0 || missing.length > 0) {
    return fail(
      name,
      [
        extra.length ? `${role} may also: ${some(extra)}` : '',
        missing.length ? `${role} lacks: ${some(missing)}` : '',
      ]
        .filter(Boolean)
        .join('. ') +
        '. The migration function re-provisions the roles on every deploy (lambda/postgres/provision-roles.ts); revoke what was granted by hand',
    );
  }
  return pass(name, `${role}: exactly the grants of lambda/postgres/provision-roles.ts`);
}
