/**
 * A timeout as `set_config` takes it: whole milliseconds, never negative (`'1500ms'`). Only the scheduled jobs
 * (health, retention) use it, once per run: nothing on the message path sets a parameter. The server-side
 * `statement_timeout` and `lock_timeout` of the message path are the database role's defaults (`alter role … in
 * database … set`, applied where the roles are provisioned), because setting them in a transaction (`SET`,
 * `set_config`) pins the connection to RDS Proxy for the rest of the session.
 *
 * @internal
 */
export function settingMs(value: number): string {
  return `${Math.max(0, Math.floor(value))}ms`;
}
