import { type CloudWatchClient, GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import type { Clock } from './clock.ts';
import type { WorkerSessions } from './sample-worker-sessions.ts';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';

/** The part of `CloudWatchClient` the smoke uses (GetMetricStatistics); tests pass a fake. */
export type MetricReader = Pick<CloudWatchClient, 'send'>;

/** RDS Proxy's count of client sessions pinned to one database connection. */
const PINNED_METRIC = 'DatabaseConnectionsCurrentlySessionPinned';

/** Where the pinning check stands, decided by the caller from the store and the environment. */
export type PinningTarget =
  | { readonly kind: 'skip'; readonly reason: string }
  | { readonly kind: 'local'; readonly sessions: WorkerSessions }
  | {
      readonly kind: 'aws';
      readonly proxyName: string | undefined;
      readonly cloudWatch: MetricReader;
      /** Start of the smoke run: the window is its minute until now. */
      readonly since: Date;
      /** Wait for a datapoint of the window until then (epoch ms): RDS Proxy metrics arrive a minute or so late. */
      readonly deadlineMs: number;
      readonly clock: Clock;
      readonly pollMs: number;
    };

/**
 * "Proxy sessions not pinned". In AWS: RDS Proxy's `DatabaseConnectionsCurrentlySessionPinned` (namespace AWS/RDS,
 * dimension ProxyName, Maximum per minute) over the run's window, waiting until the window's first minute has a
 * datapoint or the deadline passes (then SKIP: nothing to judge yet). Locally there is no proxy: the worker's own
 * sessions, as {@link sampleWorkerSessions} saw them during the run.
 *
 * @internal
 */
export async function checkProxyPinning(target: PinningTarget): Promise<SmokeCheck> {
  const name = SMOKE_CHECKS.pinning;
  if (target.kind === 'skip') return skip(name, target.reason);
  if (target.kind === 'local') return localVerdict(target.sessions);
  if (!target.proxyName) {
    return skip(name, 'no proxy name: the stack output ProxyName was not found; pass --proxy-name');
  }
  const windowStart = new Date(Math.floor(target.since.getTime() / 60_000) * 60_000);
  for (;;) {
    let datapoints: { Timestamp?: Date; Maximum?: number }[];
    try {
      const response = await target.cloudWatch.send(
        new GetMetricStatisticsCommand({
          Namespace: 'AWS/RDS',
          MetricName: PINNED_METRIC,
          Dimensions: [{ Name: 'ProxyName', Value: target.proxyName }],
          StartTime: windowStart,
          EndTime: target.clock.now(),
          Period: 60,
          Statistics: ['Maximum'],
        }),
      );
      datapoints = response.Datapoints ?? [];
    } catch (error) {
      return fail(
        name,
        `GetMetricStatistics ${PINNED_METRIC} failed: ${(error as Error).name}: ${(error as Error).message} (the operator needs cloudwatch:GetMetricStatistics)`,
      );
    }
    const most = Math.max(0, ...datapoints.map((d) => d.Maximum ?? 0));
    if (most > 0) {
      return fail(
        name,
        `up to ${most} session(s) pinned on proxy ${target.proxyName} since ${windowStart.toISOString()}: the proxy's log names the statement that pinned (enable debug logging on the proxy); docs/performance.md lists what pins`,
      );
    }
    if (datapoints.length > 0) {
      return pass(name, `${PINNED_METRIC} 0 on proxy ${target.proxyName} (${datapoints.length} minute(s))`);
    }
    if (target.clock.now().getTime() + target.pollMs > target.deadlineMs) {
      return skip(
        name,
        `no ${PINNED_METRIC} datapoint for proxy ${target.proxyName} since ${windowStart.toISOString()} yet (RDS Proxy metrics arrive a minute or two late): run again, or read it on the dashboard`,
      );
    }
    await target.clock.sleep(target.pollMs);
  }
}

function localVerdict(seen: WorkerSessions): SmokeCheck {
  const name = SMOKE_CHECKS.pinning;
  if (seen.pinning.length > 0) {
    return fail(
      name,
      `local (no proxy): the worker's sessions meet pinning conditions RDS Proxy pins on: ${seen.pinning.join(', ')}`,
    );
  }
  if (seen.sessions === 0) {
    return skip(name, 'local (no proxy): no worker session seen in pg_stat_activity during the run');
  }
  if (seen.hidden === seen.sessions) {
    return skip(
      name,
      `local (no proxy): ${seen.sessions} worker session(s) seen, but their state is hidden from this user (needs pg_read_all_stats)`,
    );
  }
  return pass(
    name,
    `local (no proxy): ${seen.sessions - seen.hidden} worker session(s) in ${seen.samples} samples of pg_stat_activity: no session-level advisory lock, no statement that pins`,
  );
}
