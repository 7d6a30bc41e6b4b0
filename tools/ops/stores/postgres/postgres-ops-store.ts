import type { OpsStore } from '../../ops-store.ts';
import { capacityFromFlags } from './capacity.ts';
import { health } from './health.ts';
import { inboxCancel } from './inbox-cancel.ts';
import { inboxHot } from './inbox-hot.ts';
import { inboxPurge } from './inbox-purge.ts';
import { inboxShow } from './inbox-show.ts';
import { inboxStats } from './inbox-stats.ts';
import { inboxTrend } from './inbox-trend.ts';
import { oldestUnfinished } from './oldest-unfinished.ts';
import type { OpsDatabase } from './open-ops-database.ts';
import { postgresCanaryStore } from './postgres-canary-store.ts';
import { postgresDlqInbox } from './postgres-dlq-inbox.ts';
import { quarantineList } from './quarantine-list.ts';
import { quarantineRelease } from './quarantine-release.ts';
import { quarantineShow } from './quarantine-show.ts';
import { postgresAuditTrail } from './record-audit.ts';

/**
 * The PostgreSQL store of the ops commands: `worker_inbox`, `worker_quarantine` and `ops_audit` through the ops
 * database user. Every command of the contract is here; the client opens on the first one that reads
 * (`database.sql()`), so a missing `--database-url` fails only the commands that need it.
 *
 * @example
 * ```ts
 * const store = postgresOpsStore({ sql: () => sql });
 * await store.inboxStats({ out, clock: systemClock }, { consumer: 'case-worker' });
 * ```
 */
export function postgresOpsStore(database: OpsDatabase): OpsStore {
  const sql = () => database.sql();
  const configured = database.configured !== false;
  return {
    kind: 'postgres',
    refusal: () => undefined,
    inboxShow: async (deps, options) => inboxShow({ sql: sql(), ...deps }, options),
    inboxStats: async (deps, options) => inboxStats({ sql: sql(), ...deps }, options),
    inboxCancel: async (deps, options) => inboxCancel({ sql: sql(), out: deps.out }, options),
    inboxHot: async (deps, options) => inboxHot({ sql: sql(), ...deps }, options),
    inboxPurge: async (deps, options) => inboxPurge({ sql: sql(), ...deps }, options),
    health: async (deps, options) => health({ sql: sql(), ...deps }, options),
    quarantineList: async (deps, options) => quarantineList({ sql: sql(), ...deps }, options),
    // Quarantine ids are global in worker_quarantine: the entry names its consumer, which a release checks.
    quarantineShow: async (deps, options) =>
      quarantineShow({ sql: sql(), ...deps }, { quarantineId: options.quarantineId }),
    quarantineRelease: async (deps, options) =>
      quarantineRelease({ sql: sql(), sqs: deps.sqs, out: deps.out }, options),
    capacity: (deps, input) => capacityFromFlags(deps, input),
    smokeStore(consumer) {
      const client = sql();
      return { canaries: postgresCanaryStore(client, consumer), sql: client };
    },
    dlqInbox: () => postgresDlqInbox(sql()),
    inboxTrend: async (options) => inboxTrend(sql(), options),
    unfinishedInbox: () => (configured ? oldestUnfinished(sql()) : undefined),
    auditTrail: () => (configured ? postgresAuditTrail(sql()) : undefined),
    describeError: (error) => database.describeError?.(error),
    close: async () => database.close?.(),
  };
}
