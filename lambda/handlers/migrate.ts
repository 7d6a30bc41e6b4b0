import { isAbsolute, join } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import postgres from 'postgres';
import { ConfigError } from '../errors.ts';
import { connectOptions } from '../postgres/connect-options.ts';
import {
  type MigrateResult,
  migrateDatabase,
  migrationSettingsFromEnvironment,
} from '../postgres/migrate-database.ts';
import { verifiedTls } from '../postgres/verified-tls.ts';

export type { MigrateResult } from '../postgres/migrate-database.ts';

interface MasterSecret {
  readonly username: string;
  readonly password: string;
}

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
 * The migration trigger function (runs on every deploy, before the worker and the relay are updated):
 * {@link migrateDatabase} applies pending migrations from the `migrations/` folder bundled next to this
 * code (`MIGRATIONS_DIR`, relative to the bundle), then provisions one database role per function:
 * `WORKER_DB_USER`, `RELAY_DB_USER`, `OPS_DB_USER`, `HEALTH_DB_USER` and `RETENTION_DB_USER` (each optional, read by
 * {@link migrationSettingsFromEnvironment}); the worker's and the relay's get `DB_STATEMENT_TIMEOUT_MS` (default
 * 15000) and `DB_LOCK_TIMEOUT_MS` (default 5000) as their `statement_timeout` and `lock_timeout` in the database.
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
  // A bad role name or timeout fails before anything is connected or applied.
  const settings = migrationSettingsFromEnvironment(env);
  const options = {
    // 10 s to connect and 8 failed attempts at most; errors name the setting and host:port.
    ...connectOptions({
      setting: env.DATABASE_URL ? 'DATABASE_URL' : 'DB_HOST/DB_PORT',
      connectTimeoutSeconds: 10,
    }),
    max: 1,
    prepare: false,
    onnotice: () => {},
  };
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
    const summary = await migrateDatabase(sql, {
      ...settings,
      directory,
      onApply: (migration) =>
        console.log(
          JSON.stringify({ message: 'applying migration', id: migration.id, name: migration.name }),
        ),
    });
    console.log(JSON.stringify({ message: 'migrations done', ...summary }));
    return summary;
  } finally {
    await sql.end({ timeout: 5 });
  }
};
