import { Token } from 'aws-cdk-lib';
import type { WorkerSettings } from '../../worker-settings.ts';

/** Database user names by function (`workerDbUser`, `relayDbUser`, `opsDbUser`, `healthDbUser` with their defaults). */
export interface DatabaseUsers {
  readonly worker: string;
  readonly relay: string;
  readonly ops: string;
  readonly health: string;
  readonly retention: string;
}

/** What PostgreSQL and the migration function accept as a role name without quoting. */
const DB_USER_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The database user of each function after defaults; each must be a lowercase SQL identifier, and no two
 * functions share one (each gets only its own privileges).
 *
 * @internal
 */
export function resolveDatabaseUsers(
  props: Pick<
    WorkerSettings,
    'workerDbUser' | 'relayDbUser' | 'opsDbUser' | 'healthDbUser' | 'retentionDbUser'
  >,
  problems: string[],
): DatabaseUsers {
  const dbUsers: DatabaseUsers = {
    worker: props.workerDbUser ?? 'sqs_worker',
    relay: props.relayDbUser ?? 'sqs_outbox_relay',
    ops: props.opsDbUser ?? 'sqs_worker_ops',
    health: props.healthDbUser ?? 'sqs_worker_health',
    retention: props.retentionDbUser ?? 'sqs_worker_retention',
  };
  const userProps = {
    worker: 'workerDbUser',
    relay: 'relayDbUser',
    ops: 'opsDbUser',
    health: 'healthDbUser',
    retention: 'retentionDbUser',
  } as const;
  const seenUsers = new Map<string, string>();
  for (const [fn, user] of Object.entries(dbUsers) as [keyof DatabaseUsers, string][]) {
    if (Token.isUnresolved(user)) continue;
    if (!DB_USER_PATTERN.test(user)) {
      problems.push(
        `${userProps[fn]} ("${user}") must be a lowercase SQL identifier (a–z, 0–9, _; at most 63 characters, not starting with a digit); rename it`,
      );
      continue;
    }
    const other = seenUsers.get(user);
    if (other) {
      problems.push(
        `${userProps[fn]} and ${other} are both "${user}": each function needs its own database user so it gets only its own privileges; rename one`,
      );
    }
    seenUsers.set(user, userProps[fn]);
  }
  return dbUsers;
}
