import type { Signer } from '@aws-sdk/rds-signer';
import postgres from 'postgres';
import type { DatabaseConfig } from './config.ts';
import { reconnectBackoff } from './reconnect-backoff.ts';
import { verifiedTls } from './verified-tls.ts';

/**
 * Creates the postgres.js client of a Lambda execution environment (call it once, at module scope).
 *
 * - `prepare: false`: RDS Proxy pins a client that uses named prepared statements.
 * - `max` = the configured pool size (default 1): a Lambda environment handles one invocation at a time,
 *   and the database's connection budget is shared by every concurrent environment.
 * - `idle_timeout` closes connections of a frozen environment; `connect_timeout` bounds a dead database.
 * - With IAM auth, a fresh token is signed for every new connection (tokens live 15 minutes); the signer (and the
 *   SDK code it needs) is imported on the first connection, not at load time.
 * - `connection.application_name` names the worker in `pg_stat_activity`.
 * - `socket`: connection attempts that keep failing at once are spaced out (see {@link reconnectBackoff});
 *   postgres.js alone reconnects hundreds of times a second to a server that turns connections away.
 * - `ssl`: the server's certificate and host name are verified ({@link verifiedTls}), never just encrypted.
 */
export function createSql(config: DatabaseConfig, options: { applicationName?: string } = {}): postgres.Sql {
  // `socket` is a documented postgres.js option (its README, "Custom socket") that its type declarations leave out.
  const socket = { socket: reconnectBackoff() } as postgres.Options<Record<string, postgres.PostgresType>>;
  const common = {
    ...socket,
    prepare: false,
    max: config.poolSize,
    idle_timeout: 30,
    connect_timeout: 5,
    max_lifetime: 60 * 10,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'sqs-inbox-worker' },
  } satisfies postgres.Options<Record<string, postgres.PostgresType>>;
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
