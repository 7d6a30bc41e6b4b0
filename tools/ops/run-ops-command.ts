import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type postgres from 'postgres';
import { parseDatabaseUrl } from '../../lambda/postgres/database-url.ts';
import { type DatabaseTarget, describeDatabaseError } from '../../lambda/postgres/describe-database-error.ts';
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import { createOpsSql, createOpsSqs } from './collaborators.ts';
import { FailedChecksError, OpsError, UsageError } from './errors.ts';
import type { OpsFlags, OpsSettings, RequiredSetting } from './ops-settings.ts';
import { requireSetting, resolveOpsSettings } from './ops-settings.ts';
import type { OpsOutput } from './output.ts';
import { createProcessOutput } from './process-output.ts';
import type { DynamoOpsTarget } from './stores/dynamodb/dynamo-inbox-stats.ts';
import { postgresOnlyError } from './stores/dynamodb/unsupported-command.ts';

/** What a command's action gets: settings, output, clock and lazily opened clients. */
export interface OpsSession {
  readonly settings: OpsSettings;
  readonly out: OpsOutput;
  readonly clock: Clock;
  /** A required setting, or a UsageError naming its flag and environment variable. */
  require(name: RequiredSetting): string;
  /**
   * The database client (opened on first use); requires --database-url / DATABASE_URL, and refuses (naming what to
   * use instead) when the store setting is dynamodb.
   */
  sql(): postgres.Sql;
  /** The database client when a URL is configured and the store is postgres, otherwise undefined. */
  optionalSql(): postgres.Sql | undefined;
  /** The SQS client (opened on first use). */
  sqs(): SQSClient;
  /** A CloudWatch client against AWS; undefined with a local SQS endpoint (emulators have no CloudWatch). */
  cloudWatch(): CloudWatchClient | undefined;
  /** A Lambda client against AWS (the event source mapping's control plane), opened on first use. */
  lambda(): LambdaClient;
  /** The DynamoDB store's table and client (opened on first use); requires --dynamodb-table / DYNAMODB_TABLE. */
  dynamo(): DynamoOpsTarget;
}

/** PostgreSQL's SQLSTATE for "permission denied". */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * Turns a "permission denied" from the database into a configuration error (exit 2) that names the fix: the ops
 * commands need the ops database user; the worker's and the relay's users are refused on purpose.
 */
function explainDatabasePrivilege(error: unknown): unknown {
  if ((error as { code?: unknown } | null)?.code !== INSUFFICIENT_PRIVILEGE) return error;
  return new UsageError(
    `${(error as Error).message}. Connect as the ops database user (sqs_worker_ops unless the stack sets opsDbUser) in --database-url / DATABASE_URL: the worker's and the relay's users may not run ops commands.`,
    { cause: error },
  );
}

/** Where {@link runOpsCommand} reports (the real process by default). */
export interface OpsRuntime {
  readonly env?: Record<string, string | undefined>;
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WriteStream | NodeJS.WritableStream;
}

/**
 * Runs one CLI command: resolves settings (flags over environment), opens clients lazily, closes them,
    const message = described?.message ?? (error instanceof Error ? error.message : String(error));
    const data = error instanceof OpsError ? error.data : undefined;
    if (settings.json) {
      out.print(JSON.stringify({ error: { type, message, exitCode, ...(data ? { data } : {}) } }, null, 2));
    }
 *
 * @returns the exit code (the caller sets `process.exitCode`).
 */
export async function runOpsCommand(
  name: string,
  flags: OpsFlags,
  action: (session: OpsSession) => Promise<unknown>,
  runtime: OpsRuntime = {},
): Promise<number> {
  let settings: OpsSettings;
  try {
    settings = resolveOpsSettings(flags, runtime.env ?? process.env);
  } catch (error) {
    const out = createProcessOutput({
      json: flags.json === true,
      stdout: runtime.stdout,
      stderr: runtime.stderr,
    });
    const message = error instanceof Error ? error.message : String(error);
    if (flags.json)
      out.print(JSON.stringify({ error: { type: 'UsageError', message, exitCode: 2 } }, null, 2));
    out.note(`sqs-worker ${name}: ${message}`);
    return 2;
  }
  const out = createProcessOutput({ json: settings.json, stdout: runtime.stdout, stderr: runtime.stderr });
  let sql: postgres.Sql | undefined;
  let database: DatabaseTarget | undefined;
  let sqs: SQSClient | undefined;
  let cloudWatch: CloudWatchClient | undefined;
  let lambda: LambdaClient | undefined;
  let dynamo: DynamoDBClient | undefined;
  const session: OpsSession = {
    settings,
    out,
    clock: systemClock,
    require: (setting) => requireSetting(settings, setting, name),
    sql() {
      if (sql) return sql;
      if (settings.store === 'dynamodb') throw postgresOnlyError(name);
      const setting = settings.databaseUrlSetting;
      const checked = parseDatabaseUrl(requireSetting(settings, 'databaseUrl', name), setting);
      if ('problem' in checked) throw new UsageError(checked.problem);
      database = { setting, address: checked.address };
      sql = createOpsSql(settings.databaseUrl as string, setting);
      return sql;
    },
    optionalSql() {
      return settings.databaseUrl && settings.store !== 'dynamodb' ? session.sql() : undefined;
    },
    sqs() {
      sqs ??= createOpsSqs(settings);
      return sqs;
    },
    cloudWatch() {
      if (settings.sqsEndpoint) return undefined;
      cloudWatch ??= new CloudWatchClient(settings.region ? { region: settings.region } : {});
      return cloudWatch;
    },
    lambda() {
      lambda ??= new LambdaClient(settings.region ? { region: settings.region } : {});
      return lambda;
    },
    dynamo() {
      const tableName = requireSetting(settings, 'dynamodbTable', name);
      dynamo ??= new DynamoDBClient({
        ...(settings.region ? { region: settings.region } : {}),
        ...(settings.dynamodbEndpoint ? { endpoint: settings.dynamodbEndpoint } : {}),
      });
      return { doc: DynamoDBDocumentClient.from(dynamo), tableName };
    },
  };
  try {
    await action(session);
    return 0;
  } catch (caught) {
    const error = explainDatabasePrivilege(caught);
    // A database error names the setting and host:port to check (never the password) and what to do.
    const described =
      database && !(error instanceof OpsError) ? describeDatabaseError(error, database) : undefined;
    const exitCode = error instanceof OpsError ? error.exitCode : described?.configuration ? 2 : 1;
    const type = error instanceof Error ? error.name : 'Error';
    const message = described?.message ?? (error instanceof Error ? error.message : String(error));
    const data = error instanceof OpsError ? error.data : undefined;
    // A result that was printed with its failures in it (FailedChecksError) is the one JSON document on stdout.
    if (settings.json && !(error instanceof FailedChecksError)) {
      out.print(JSON.stringify({ error: { type, message, exitCode, ...(data ? { data } : {}) } }, null, 2));
    }
    out.note(`sqs-worker ${name}: ${message}`);
    return exitCode;
  } finally {
    sqs?.destroy();
    cloudWatch?.destroy();
    lambda?.destroy();
    dynamo?.destroy();
    await sql?.end({ timeout: 5 }).catch(() => {});
  }
}
