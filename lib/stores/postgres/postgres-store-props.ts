import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * The settings of the PostgreSQL store: the database, its proxy and users, the connection budget of the capacity
 * formula, the commit mode, and the scheduled functions that read the database (outbox relay, health job,
 * retention job, the event source mapping's breaker). Each is documented on {@link WorkerSettings}.
 */
export const POSTGRES_STORE_KEYS = [
  'dbPoolSize',
  'dbMaxConnections',
  'dbReservedConnections',
  'dbWriteIopsBudget',
  'writeIopsPerMessage',
  'dbStatementTimeout',
  'dbLockTimeout',
  'proxyMaxConnectionsPercent',
  'instanceType',
  'postgresVersion',
  'multiAz',
  'deletionProtection',
  'backupRetention',
  'allocatedStorageGiB',
  'databaseName',
  'workerDbUser',
  'relayDbUser',
  'opsDbUser',
  'healthDbUser',
  'retentionDbUser',
  'secretRotationInterval',
  'migrationsDirectory',
  'commitMode',
  'connectionsAlarmPercent',
  'outboxRelay',
  'outboxRelayEntry',
  'outboxRelaySchedule',
  'outboxRelayMaxRun',
  'outboxPendingAgeSlo',
  'healthCheck',
  'healthCheckEntry',
  'healthCheckSchedule',
  'quarantineAgeAlarm',
  'retention',
  'retentionSchedule',
  'retentionMaxRun',
  'inboxRetention',
  'outboxRetention',
  'effectLogRetention',
  'quarantineRetention',
  'breaker',
  'breakerCheckInterval',
  'breakerFailureThreshold',
  'breakerMinOpen',
  'breakerHalfOpen',
  'breakerHalfOpenConcurrency',
] as const satisfies readonly (keyof WorkerSettings)[];

/**
 * `store` of {@link SqsDatabaseWorkerProps} for RDS PostgreSQL behind RDS Proxy in `vpc` (required with it).
 *
 * @example
 * ```ts
 * new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc: network.vpc,
 *   store: { kind: 'postgres', dbMaxConnections: 400, commitMode: 'per-batch' },
 *   alarmEmail: 'oncall@invoices.example.org',
 * });
 * ```
 */
export interface PostgresStoreProps extends Pick<WorkerSettings, (typeof POSTGRES_STORE_KEYS)[number]> {
  readonly kind: 'postgres';
}
