/**
 * EMF metric names of the health job (`lambda/health/publish-health.ts`), shared with the stack's alarms and
 * dashboard through `WORKER_METRICS.health` (lib/observability/worker-metrics.ts). Ages are Milliseconds, the rest Count.
 */
export const HEALTH_METRICS = {
  /** 1 per completed check: the "health job not running" alarm treats its absence as breaching. */
  heartbeat: 'HealthCheck',
  quarantineOpen: 'QuarantineOpen',
  quarantineOldestOpenAgeMs: 'QuarantineOldestOpenAgeMs',
  inboxReceived: 'InboxReceived',
  inboxProcessing: 'InboxProcessing',
  inboxFailedRetryable: 'InboxFailedRetryable',
  inboxFailedTerminal: 'InboxFailedTerminal',
  inboxOldestProcessingAgeMs: 'InboxOldestProcessingAgeMs',
  inboxOldestRetryableAgeMs: 'InboxOldestRetryableAgeMs',
  inboxOldestInFlightAgeMs: 'InboxOldestInFlightAgeMs',
  outboxPending: 'OutboxPending',
  /** The same name the outbox relay emits: the outbox age alarm keeps its data when the relay stops running. */
  outboxOldestPendingAgeMs: 'OutboxOldestPendingAgeMs',
  lockWaits: 'LockWaits',
  lockWaitOldestMs: 'LockWaitOldestMs',
  deadlocks: 'Deadlocks',
  longTransactions: 'LongTransactions',
  longTransactionOldestAgeMs: 'LongTransactionOldestAgeMs',
  /** PROCESSING items whose lease expired (the DynamoDB store's; 0 on PostgreSQL, which holds no leases). */
  inboxLeasesExpired: 'InboxLeasesExpired',
} as const;
