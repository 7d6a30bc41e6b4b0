import { isAbsolute, join } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import postgres from 'postgres';
import { ConfigError } from '../errors.ts';
import { runMigrations } from '../run-migrations.ts';
import { verifiedTls } from '../verified-tls.ts';

/** What one run of the migration function did (returned to the deploy trigger, visible in its logs). */
export interface MigrateResult {
  /** Ids of the migrations applied by this run. */
  readonly applied: readonly number[];
  /** Highest migration id in the database after the run. */
  readonly current: number;
  /** The database role provisioned for the worker (IAM authentication through RDS Proxy). */
  readonly workerRole: string | undefined;
}

interface MasterSecret {
  readonly username: string;
  readonly password: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Reads the master credentials from Secrets Manager (the RDS-managed master secret). */
async function readMasterSecret(secretArn: string): Promise<MasterSecret> {
  const response = await new SecretsManagerClient({}).send(
    new GetSecretValueCommand({ SecretId: secretArn }),
  );
  const secret = JSON.parse(response.SecretString ?? '{}') as Partial<MasterSecret>;
  if (!secret.username || !secret.password) {
    throw new ConfigError(
      `Secret ${secretArn} has no username/password fields; point DB_SECRET_ARN at the RDS master secret`,
    );
  }
  return { username: secret.username, password: secret.password };
}

/**
 * Creates the worker's login role if it is missing, lets it authenticate with IAM (`rds_iam`, present on RDS
 * only) and grants it data access on the public schema, now and for tables later migrations create.
 * Idempotent: every deploy runs it. The role has no password.
 */
async function provisionWorkerRole(sql: postgres.Sql, role: string, database: string): Promise<void> {
  if (!IDENTIFIER.test(role)) {
    throw new ConfigError(`WORKER_DB_USER must be a lowercase SQL identifier (given "${role}")`);
  }
  const [existing] = await sql`select 1 as found from pg_roles where rolname = ${role}`;
  if (!existing) await sql`create role ${sql(role)} with login`;
  const [rdsIam] = await sql`select 1 as found from pg_roles where rolname = 'rds_iam'`;
  if (rdsIam) await sql`grant rds_iam to ${sql(role)}`;
  await sql`grant connect on database ${sql(database)} to ${sql(role)}`;
  await sql`grant usage on schema public to ${sql(role)}`;
  await sql`grant select, insert, update, delete on all tables in schema public to ${sql(role)}`;
  await sql`grant usage, select on all sequences in schema public to ${sql(role)}`;
  await sql`alter default privileges in schema public grant select, insert, update, delete on tables to ${sql(role)}`;
  await sql`alter default privileges in schema public grant usage, select on sequences to ${sql(role)}`;
}

/**
 * The migration trigger function (runs on every deploy, before the worker and the relay are updated):
 * applies pending migrations with {@link runMigrations} from the `migrations/` folder bundled next to this
 * code (`MIGRATIONS_DIR`, relative to the bundle), then provisions the worker role `WORKER_DB_USER`.
 *
 * Connects directly to the instance (not the proxy) as the master user read from `DB_SECRET_ARN`, with TLS that
 * verifies the instance's certificate and host name: the RDS CA must be trusted, which the stack arranges with
 * `NODE_EXTRA_CA_CERTS` (see {@link verifiedTls}).
 * Locally, `DATABASE_URL` replaces the host/secret settings. Logs name migrations, never credentials.
 */
export const handler = async (): Promise<MigrateResult> => {
  const env = process.env;
  const directoryName = env.MIGRATIONS_DIR ?? 'migrations';
  const directory = isAbsolute(directoryName)
    ? directoryName
    : join(env.LAMBDA_TASK_ROOT ?? process.cwd(), directoryName);
  const options = { max: 1, prepare: false, onnotice: () => {}, connect_timeout: 10 } as const;
  let sql: postgres.Sql;
  if (env.DATABASE_URL) {
    sql = postgres(env.DATABASE_URL, options);
  } else {
    const missing = ['DB_HOST', 'DB_NAME', 'DB_SECRET_ARN'].filter((name) => !env[name]);
    if (missing.length > 0) throw new ConfigError(`Set ${missing.join(', ')} (or DATABASE_URL locally)`);
    const secret = await readMasterSecret(env.DB_SECRET_ARN as string);
    sql = postgres({
      ...options,
      host: env.DB_HOST,
      port: Number(env.DB_PORT ?? 5432),
      database: env.DB_NAME,
      username: secret.username,
      password: secret.password,
      ssl: env.DB_SSL === 'false' ? false : verifiedTls(env.DB_HOST as string),
    });
  }
  try {
    const result = await runMigrations(sql, {
      directory,
      onApply: (migration) =>
        console.log(
          JSON.stringify({ message: 'applying migration', id: migration.id, name: migration.name }),
        ),
    });
    const workerRole = env.WORKER_DB_USER || undefined;
    if (workerRole) {
      const [row] = await sql<{ database: string }[]>`select current_database() as database`;
      await provisionWorkerRole(sql, workerRole, row?.database ?? (env.DB_NAME as string));
    }
    const summary = {
      applied: result.applied.map((migration) => migration.id),
      current: result.current,
      workerRole,
    };
    console.log(JSON.stringify({ message: 'migrations done', ...summary }));
    return summary;
  } finally {
    await sql.end({ timeout: 5 });
  }
};
