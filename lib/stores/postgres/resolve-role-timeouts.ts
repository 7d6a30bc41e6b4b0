import { Duration } from 'aws-cdk-lib';
import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * The `statement_timeout` and `lock_timeout` of the worker's and the relay's roles after defaults.
 *
 * @internal
 */
export function resolveRoleTimeouts(
  props: Pick<WorkerSettings, 'dbStatementTimeout' | 'dbLockTimeout'>,
  problems: string[],
): { readonly dbStatementTimeout: Duration; readonly dbLockTimeout: Duration } {
  // The roles' server-side timeouts (the engine sets none itself): whole milliseconds, lock wait ≤ statement.
  const roleTimeoutMs = (name: string, value: Duration, maxMs: number): number | undefined => {
    if (value.isUnresolved()) return undefined;
    const ms = value.toMilliseconds({ integral: false });
    if (Number.isInteger(ms) && ms >= 1 && ms <= maxMs) return ms;
    problems.push(
      `${name} (${ms} ms) must be whole milliseconds from 1 ms to ${maxMs} ms; set a value in that range`,
    );
    return undefined;
  };
  const dbStatementTimeout = props.dbStatementTimeout ?? Duration.seconds(15);
  const dbLockTimeout = props.dbLockTimeout ?? Duration.seconds(5);
  const statementMs = roleTimeoutMs('dbStatementTimeout', dbStatementTimeout, 900_000);
  const lockMs = roleTimeoutMs('dbLockTimeout', dbLockTimeout, 600_000);
  if (statementMs !== undefined && lockMs !== undefined && lockMs > statementMs) {
    problems.push(
      `dbLockTimeout (${lockMs} ms) must not exceed dbStatementTimeout (${statementMs} ms): a lock wait is part of a statement; lower dbLockTimeout`,
    );
  }
  return { dbStatementTimeout, dbLockTimeout };
}
