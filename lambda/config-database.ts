import type { DatabaseConfig } from './config.ts';
import type { ConfigVariables } from './config-variables.ts';

/**
 * The database settings: none for a DynamoDB worker given none, `DATABASE_URL` (local), or the `DB_*` variables
 * (deployed); undefined when they are missing or invalid (the problem is reported).
 *
 * @internal
 */
export function readDatabaseConfig(
  env: Record<string, string | undefined>,
  e: ConfigVariables,
  dynamo: boolean,
  problems: string[],
): DatabaseConfig | undefined {
  let database: DatabaseConfig | undefined;
  if (dynamo && !env.DATABASE_URL && !env.DB_HOST) {
    // A DynamoDB worker needs no database; one given anyway (an effect log, say) is read as usual.
    database = { kind: 'none', poolSize: e.DB_POOL_SIZE };
  } else if (e.DATABASE_URL) {
    database = {
      kind: 'url',
      url: e.DATABASE_URL,
      poolSize: e.DB_POOL_SIZE,
      prepare: e.DB_PREPARE === 'true',
    };
  } else if (env.DATABASE_URL) {
    // Given but invalid: its problem is reported; the DB_HOST settings are not what the user meant.
  } else {
    database = readDatabaseHost(e, problems);
  }
  const proxyHost = database?.prepare ? rdsProxyHost(database) : undefined;
  if (proxyHost) {
    problems.push(
      `DB_PREPARE=true is for direct connections only, and ${proxyHost} is an RDS Proxy endpoint: RDS Proxy pins every connection that prepares a statement, one database connection per Lambda environment. Unset DB_PREPARE (or set it to false), or connect to the database instance directly`,
    );
  }
  return database;
}

/** The deployed database: `DB_HOST`, `DB_NAME`, `DB_USER` and the authentication's own variables. */
function readDatabaseHost(e: ConfigVariables, problems: string[]): DatabaseConfig | undefined {
  const missing = (['DB_HOST', 'DB_NAME', 'DB_USER'] as const).filter((name) => !e[name]) as string[];
  if (e.DB_AUTH === 'iam' && !e.AWS_REGION) missing.push('AWS_REGION');
  if (e.DB_AUTH === 'password' && !e.DB_PASSWORD) missing.push('DB_PASSWORD');
  if (missing.length > 0) {
    problems.push(
      `Set DATABASE_URL (local) or ${missing.join(', ')} (deployed, DB_AUTH=${e.DB_AUTH}); missing: ${missing.join(', ')}`,
    );
    return undefined;
  }
  return {
    kind: 'host',
    host: e.DB_HOST as string,
    port: e.DB_PORT,
    database: e.DB_NAME as string,
    user: e.DB_USER as string,
    auth: e.DB_AUTH,
    password: e.DB_PASSWORD,
    region: e.AWS_REGION ?? '',
    ssl: e.DB_SSL === 'true',
    poolSize: e.DB_POOL_SIZE,
    prepare: e.DB_PREPARE === 'true',
  };
}

/**
 * The host of `database` when it is an RDS Proxy endpoint (`<name>.proxy-<id>.<region>.rds.amazonaws.com`, and
 * the `.com.cn` form), otherwise `undefined`.
 */
function rdsProxyHost(database: DatabaseConfig): string | undefined {
  let host: string;
  if (database.kind === 'none') return undefined;
  if (database.kind === 'host') host = database.host;
  else {
    try {
      host = new URL(database.url).hostname;
    } catch {
      return undefined;
    }
  }
  return /\.proxy-[a-z0-9]+\.[a-z0-9-]+\.rds\.amazonaws\.com(?:\.cn)?$/i.test(host) ? host : undefined;
}
