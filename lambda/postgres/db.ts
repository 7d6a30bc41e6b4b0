import type { Signer } from '@aws-sdk/rds-signer';
import postgres from 'postgres';
import type { DatabaseConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { connectOptions } from './connect-options.ts';
import { ROUND_TRIP_OPTIONS } from './round-trip-options.ts';
import { verifiedTls } from './verified-tls.ts';

/**
 * Creates the postgres.js client of a Lambda execution environment (call it once, at module scope).
 *
 * - `prepare: false`: RDS Proxy pins a client that uses named prepared statements. `config.prepare`
 *   (`DB_PREPARE=true`, refused by `loadConfig` for an RDS Proxy endpoint) turns them on for direct connections:
 *   a parameterized statement is then described once per connection and costs one round trip instead of two.
 * - {@link ROUND_TRIP_OPTIONS}: with this project's postgres.js patch, a statement whose parameters are all cast
 *   to built-in types costs one round trip, and a transaction's BEGIN goes out with its first statement.
 * - `max` = the configured pool size (default 1): a Lambda environment handles one invocation at a time,
 *   and the database's connection budget is shared by every concurrent environment.
 * - `idle_timeout` closes connections of a frozen environment.
 * - {@link connectOptions}: a connection that does not open within 5 s, or 8 failed attempts in a row (about 5 s),
 *   fail the waiting query with a `DatabaseConnectError` naming `options.setting` (default `DATABASE_URL` or
 *   `DB_HOST/DB_PORT`, after `config.kind`) and host:port; postgres.js alone waits forever on some servers.
 *   Attempts that keep failing at once are spaced out (postgres.js alone reconnects hundreds of times a second
 *   to a server that turns connections away).
 * - With IAM auth, a fresh token is signed for every new connection (tokens live 15 minutes); the signer (and the
 *   SDK code it needs) is imported on the first connection, not at load time.
 * - `connection.application_name` names the worker in `pg_stat_activity`.
 * - `ssl`: the server's certificate and host name are verified ({@link verifiedTls}), never just encrypted.
 *
 * @example
 * ```ts
 * const config = loadConfig();
 * const sql = createSql(config.database, { applicationName: config.consumer }); // module scope
 * ```
 */
export function createSql(
  config: DatabaseConfig,
  options: { applicationName?: string; setting?: string } = {},
): postgres.Sql {
  if (config.kind === 'none') {
    throw new ConfigError(
      'This function needs PostgreSQL, and the worker is configured for DynamoDB (WORKER_STORE=dynamodb) without DATABASE_URL or DB_HOST; set them for the functions that use the database',
    );
  }
  const common = {
    ...connectOptions({
      setting: options.setting ?? (config.kind === 'url' ? 'DATABASE_URL' : 'DB_HOST/DB_PORT'),
      connectTimeoutSeconds: 5,
    }),
    prepare: config.prepare === true,
    max: config.poolSize,
    idle_timeout: 30,
    max_lifetime: 60 * 10,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'sqs-inbox-worker' },
  } satisfies postgres.Options<Record<string, postgres.PostgresType>>;
  // Options of the patched driver, unknown to its type declarations.
  Object.assign(common, ROUND_TRIP_OPTIONS);
  if (config.kind === 'url') return postgres(config.url, common);

  let signer: Promise<Signer> | undefined;
  const signToken = async (): Promise<string> => {
    signer ??= import('@aws-sdk/rds-signer').then(
      ({ Signer }) =>
        new Signer({
          hostname: config.host,
          port: config.port,
          username: config.user,
          region: config.region,
        }),
    );
    return (await signer).getAuthToken();
  };
  return postgres({
    ...common,
    host: config.host,
    port: config.port,
    database: config.database,
    username: config.user,
    password: config.auth === 'iam' ? signToken : config.password,
    ssl: config.ssl ? verifiedTls(config.host, config.ca) : false,
  });
}
