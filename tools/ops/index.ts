/** The operations commands of `sqs-worker` (bin/sqs-worker.ts), callable from scripts and tests. */
export {
  type BreakerDeps,
  type BreakerStatusResult,
  breakerClose,
  breakerOpen,
  breakerStatus,
} from './breaker.ts';
export { capacity } from './capacity.ts';
export { type Clock, systemClock } from './clock.ts';
export { createOpsSql, createOpsSqs, type SqsSender } from './collaborators.ts';
export { decodeMessage } from './decode-message.ts';
export { dlqMoveTask } from './dlq-move-task.ts';
export { dlqPeek, groupByFingerprint } from './dlq-peek.ts';
export { dlqRedrive, parseRedriveFilters } from './dlq-redrive.ts';
export { dynamoInboxShow } from './dynamo-inbox-show.ts';
export { type DynamoOpsTarget, dynamoInboxStats } from './dynamo-inbox-stats.ts';
export { dynamoQuarantineList } from './dynamo-quarantine-list.ts';
export { dynamoQuarantineRelease } from './dynamo-quarantine-release.ts';
export { dynamoQuarantineShow } from './dynamo-quarantine-show.ts';
export { dynamoDbCapacity } from './dynamodb-capacity.ts';
export {
  EXIT_CODES,
  FailedChecksError,
  OperationError,
  OpsError,
  OutOfOrderReleaseError,
  UsageError,
} from './errors.ts';
export { health } from './health.ts';
export { inboxPurge } from './inbox-purge.ts';
export { inboxShow } from './inbox-show.ts';
export { inboxStats } from './inbox-stats.ts';
export { createMemoryOutput, type MemoryOutput } from './memory-output.ts';
export type { OpsOutput, Progress } from './output.ts';
export { quarantineList } from './quarantine-list.ts';
export { quarantineRelease } from './quarantine-release.ts';
export { quarantineShow } from './quarantine-show.ts';
export { queueStatus } from './queue-status.ts';
export { runOpsCommand } from './run-ops-command.ts';
export { type SmokeDeps, type SmokeOptions, type SmokeResult, smoke } from './smoke.ts';
export { type SmokeCommandOptions, smokeCommand } from './smoke-command.ts';
