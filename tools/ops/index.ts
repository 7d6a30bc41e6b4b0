/** The operations commands of `sqs-worker` (bin/sqs-worker.ts), callable from scripts and tests. */
export {
  type BreakerDeps,
  type BreakerStatusResult,
  breakerClose,
  breakerOpen,
  breakerStatus,
} from './breaker.ts';
export { type Clock, systemClock } from './clock.ts';
export { createOpsSql, createOpsSqs, type SqsSender } from './collaborators.ts';
export { decodeMessage } from './decode-message.ts';
export { dlqMoveTask } from './dlq-move-task.ts';
export { dlqPeek, groupByFingerprint } from './dlq-peek.ts';
export { dlqRedrive, parseRedriveFilters } from './dlq-redrive.ts';
export {
  EXIT_CODES,
  FailedChecksError,
  OperationError,
  OpsError,
  OutOfOrderReleaseError,
  UsageError,
} from './errors.ts';
export { createMemoryOutput, type MemoryOutput } from './memory-output.ts';
export type { OpsOutput, Progress } from './output.ts';
export { queueStatus } from './queue-status.ts';
export { runOpsCommand } from './run-ops-command.ts';
export { type SmokeDeps, type SmokeOptions, type SmokeResult, smoke } from './smoke.ts';
export { type SmokeCommandOptions, smokeCommand } from './smoke-command.ts';
export { dynamoInboxShow } from './stores/dynamodb/dynamo-inbox-show.ts';
export { type DynamoOpsTarget, dynamoInboxStats } from './stores/dynamodb/dynamo-inbox-stats.ts';
export { dynamoQuarantineList } from './stores/dynamodb/dynamo-quarantine-list.ts';
export { dynamoQuarantineRelease } from './stores/dynamodb/dynamo-quarantine-release.ts';
export { dynamoQuarantineShow } from './stores/dynamodb/dynamo-quarantine-show.ts';
export { dynamoDbCapacity } from './stores/dynamodb/dynamodb-capacity.ts';
export { capacity } from './stores/postgres/capacity.ts';
export { health } from './stores/postgres/health.ts';
export { inboxPurge } from './stores/postgres/inbox-purge.ts';
export { inboxShow } from './stores/postgres/inbox-show.ts';
export { inboxStats } from './stores/postgres/inbox-stats.ts';
export { quarantineList } from './stores/postgres/quarantine-list.ts';
export { quarantineRelease } from './stores/postgres/quarantine-release.ts';
export { quarantineShow } from './stores/postgres/quarantine-show.ts';
