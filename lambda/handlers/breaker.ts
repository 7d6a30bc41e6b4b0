import type { Context } from 'aws-lambda';
import { breakerFromConfig } from '../breaker/breaker-from-config.ts';
import { createDatabaseProbe, runBreaker } from '../breaker/index.ts';
import { loadConfig } from '../config.ts';
import { createSql } from '../postgres/db.ts';

// Cold start: configuration is read and validated once; clients and the breaker's state live at module scope,
// so one warm environment (reserved concurrency 1) carries the state from one scheduled run to the next.
const config = loadConfig();
const { breaker: settings } = config;
// A pool of one, thrown away when a probe times out (a stalled server would hold every later probe).
const probe = createDatabaseProbe(
  () => createSql({ ...config.database, poolSize: 1 }, { applicationName: 'breaker' }),
  settings.probeTimeoutMs,
);
const breaker = breakerFromConfig(settings, probe);

/**
 * The breaker Lambda, invoked every minute (EventBridge): ticks every `BREAKER_CHECK_INTERVAL_MS` until
 * `BREAKER_RUN_GUARD_MS` before its timeout, disabling the worker's event source mapping while the database is
 * unavailable and enabling it again (half-open, then the configured scaling) once probes succeed; while it is closed,
 * with `CONCURRENCY_ADAPTIVE=true`, it moves the mapping's `MaximumConcurrency` from the worker's signals of load.
 */
export const handler = async (_event: unknown, context: Context) => {
  const until = Date.now() + context.getRemainingTimeInMillis() - settings.runGuardMs;
  const state = await runBreaker(breaker, { until, intervalMs: settings.checkIntervalMs });
  return { status: state?.status, held: state?.held ?? false };
};
