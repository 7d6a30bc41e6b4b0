import postgres from 'postgres';
import { collectHealth } from '../../lambda/health/collect-health.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import { purgeRetention } from '../../lambda/retention/purge-retention.ts';

/**
 * One run of each scheduled job after the scenario, as its database role: the health job's figures
 * ({@link collectHealth}) and a retention purge ({@link purgeRetention}, windows of the stack's defaults: the run's
 * rows are fresh, so nothing is due, but every statement runs with the role's privileges). What they found, and
 * each failure (a missing grant names the role and the privilege).
 *
 * @internal
 */
export async function runScheduledJobs(
  urlOf: (fn: RoleFunction) => string,
  consumer: string,
): Promise<{ detail: string; problems: string[] }> {
  const connect = (fn: RoleFunction) =>
    postgres(urlOf(fn), {
      ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
      max: 1,
      onnotice: () => {},
    });
  const health = connect('health');
  const retention = connect('retention');
  const problems: string[] = [];
  const role = async (sql: postgres.Sql) =>
    ((await sql<{ role: string }[]>`select current_user as role`)[0] as { role: string }).role;
  try {
    const [healthRole, retentionRole] = [await role(health), await role(retention)];
    const figures = await collectHealth(health, { consumer }).catch((error: Error) => {
      problems.push(`health job (role ${healthRole}): ${error.message}`);
      return undefined;
    });
    // The queues' retentions of the local stack (4 and 14 days); windows as the construct's defaults.
    const day = 86_400;
    const purged = await purgeRetention(retention, {
      consumer,
      retentions: { sourceRetentionSeconds: 4 * day, dlqRetentionSeconds: 14 * day },
      inboxSeconds: 19 * day,
      outboxSeconds: 7 * day,
      effectLogSeconds: 19 * day,
      quarantineSeconds: 30 * day,
      deadline: Date.now() + 10_000,
    }).catch((error: Error) => {
      problems.push(`retention job (role ${retentionRole}): ${error.message}`);
      return undefined;
    });
    const removed = purged ? Object.values(purged.removed).reduce((sum, n) => sum + n, 0) : 0;
    return {
      detail: `health ${healthRole} (${figures?.quarantine.open ?? 0} open quarantine entries), retention ${retentionRole} (${removed} rows due)`,
      problems,
    };
  } finally {
    await Promise.all([health.end({ timeout: 5 }), retention.end({ timeout: 5 })]);
  }
}
