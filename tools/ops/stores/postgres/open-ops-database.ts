import type postgres from 'postgres';
import { parseDatabaseUrl } from '../../../../lambda/postgres/database-url.ts';
import {
  type DatabaseTarget,
  describeDatabaseError,
} from '../../../../lambda/postgres/describe-database-error.ts';
import { OpsError, UsageError } from '../../errors.ts';
import { type OpsSettings, requireSetting } from '../../ops-settings.ts';
import type { DescribedError } from '../../ops-store.ts';
import { createOpsSql } from './create-ops-sql.ts';

/** The database behind the PostgreSQL ops store: a client opened on first use (tests pass one they hold). */
export interface OpsDatabase {
  /** The client; opening it may throw the UsageError of a missing or invalid database URL. */
  sql(): postgres.Sql;
  /** False when no database URL is set: the optional reads and audits of the SQS commands are skipped. @default true */
  readonly configured?: boolean;
  /** What the operator should read of an error of this client; undefined when it is not one. */
  describeError?(error: unknown): DescribedError | undefined;
  /** Ends the client, when it was opened. */
  close?(): Promise<void>;
}

/** PostgreSQL's SQLSTATE for "permission denied". */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * The ops database of the settings (`--database-url` / `DATABASE_URL`), opened by the first `sql()` of `command`. Its
 * errors are described for the operator: a "permission denied" names the ops database user to connect as (exit 2;
 * the worker's and the relay's users are refused on purpose), and once the client is open, a failed connection,
 * login or missing table names the setting and host:port to check, never the password.
 */
export function openOpsDatabase(settings: OpsSettings, command: string): OpsDatabase {
  let sql: postgres.Sql | undefined;
  let target: DatabaseTarget | undefined;
  return {
    configured: settings.databaseUrl !== undefined,
    sql() {
      if (sql) return sql;
      const setting = settings.databaseUrlSetting;
      const checked = parseDatabaseUrl(requireSetting(settings, 'databaseUrl', command), setting);
      if ('problem' in checked) throw new UsageError(checked.problem);
      target = { setting, address: checked.address };
      sql = createOpsSql(settings.databaseUrl as string, setting);
      return sql;
    },
    describeError(error) {
      if ((error as { code?: unknown } | null)?.code === INSUFFICIENT_PRIVILEGE) {
        return {
          type: 'UsageError',
          exitCode: 2,
          message: `${(error as Error).message}. Connect as the ops database user (sqs_worker_ops unless the stack sets opsDbUser) in --database-url / DATABASE_URL: the worker's and the relay's users may not run ops commands.`,
        };
      }
      if (!target || error instanceof OpsError) return undefined;
      const described = describeDatabaseError(error, target);
      return {
        type: error instanceof Error ? error.name : 'Error',
        message: described.message,
        exitCode: described.configuration ? 2 : 1,
      };
    },
    async close() {
      await sql?.end({ timeout: 5 }).catch(() => {});
    },
  };
}
