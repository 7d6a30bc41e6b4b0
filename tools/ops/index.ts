/** The operations commands of `sqs-worker` (bin/sqs-worker.ts), callable from scripts and tests. */
export {
  type BreakerDeps,
  type BreakerStatusResult,
  breakerClose,
  breakerOpen,
  breakerStatus,
} from './breaker.ts';
export { capacityCommand } from './capacity-command.ts';
export { type Clock, systemClock } from './clock.ts';
export { createOpsSqs, type SqsSender } from './collaborators.ts';
export {
  type ConcurrencyBounds,
  type ConcurrencyDeps,
  type ConcurrencyStatusResult,
  concurrencyPin,
  concurrencyStatus,
  concurrencyUnpin,
  parsePinArgument,
} from './concurrency.ts';
export { decodeMessage } from './decode-message.ts';
export { type DlqCanaryRedriveResult, dlqCanaryRedrive } from './dlq-canary-redrive.ts';
export { dlqMoveTask } from './dlq-move-task.ts';
export { dlqPeek, groupByFingerprint } from './dlq-peek.ts';
export { dlqRedrive, parseRedriveFilters } from './dlq-redrive.ts';
export { dlqRedriveCommand } from './dlq-redrive-command.ts';
export { type EditedBodyInput, readEditedBody } from './edited-release.ts';
export {
  EXIT_CODES,
  FailedChecksError,
  OperationError,
  OpsError,
  OutOfOrderReleaseError,
  UsageError,
} from './errors.ts';
export type { InboxCancelResult } from './inbox-cancel-result.ts';
export {
  type LogsResult,
  logsCommand,
  pickLogQuery,
  resolveLogsSource,
} from './logs-command.ts';
export { createMemoryOutput, type MemoryOutput } from './memory-output.ts';
export type {
  AuditEntry,
  AuditTrail,
  DlqInbox,
  InboxState,
  InboxTrend,
  InboxTrendPeriod,
  InboxTypeTrend,
  OpsStore,
  SmokeStore,
  StoreKind,
  UnfinishedInbox,
} from './ops-store.ts';
export type { OpsOutput, Progress } from './output.ts';
export { parseQuarantineFilter, type QuarantineFilter } from './quarantine-filter.ts';
export { type QuarantineReleaseAllResult, quarantineReleaseAll } from './quarantine-release-all.ts';
export { quarantineReleaseAllCommand, singleReleaseRefusal } from './quarantine-release-all-command.ts';
export { queueStatus } from './queue-status.ts';
export { type QueueTrendOptions, type QueueTrendResult, queueTrend } from './queue-trend.ts';
export { runOpsCommand } from './run-ops-command.ts';
export { type SmokeDeps, type SmokeOptions, type SmokeResult, smoke } from './smoke.ts';
export { type SmokeCommandOptions, smokeCommand } from './smoke-command.ts';
export {
  type DynamoOpsTable,
  type DynamoOpsTarget,
  dynamoOpsStore,
  openDynamoOpsTable,
} from './stores/dynamodb/index.ts';
export { openOpsStore } from './stores/open-ops-store.ts';
export { createOpsSql } from './stores/postgres/create-ops-sql.ts';
export { type OpsDatabase, openOpsDatabase, postgresOpsStore } from './stores/postgres/index.ts';
export {
  TREND_THRESHOLDS,
  type TrendVerdict,
  type TrendVerdictInput,
  type TrendVerdictKind,
  trendVerdict,
} from './trend-verdict.ts';
