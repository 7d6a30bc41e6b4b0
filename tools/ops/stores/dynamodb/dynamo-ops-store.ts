import type { OpsStore } from '../../ops-store.ts';
import { dynamoAuditTrail } from './dynamo-audit-trail.ts';
import { dynamoCanaryStore } from './dynamo-canary-store.ts';
import { dynamoDlqInbox } from './dynamo-dlq-inbox.ts';
import { dynamoHealth } from './dynamo-health.ts';
import { dynamoInboxCancel } from './dynamo-inbox-cancel.ts';
import { dynamoInboxHot } from './dynamo-inbox-hot.ts';
import { dynamoInboxShow } from './dynamo-inbox-show.ts';
import { dynamoInboxStats } from './dynamo-inbox-stats.ts';
import { dynamoInboxTrend } from './dynamo-inbox-trend.ts';
import type { DynamoOpsTable } from './dynamo-ops-table.ts';
import { dynamoQuarantineList } from './dynamo-quarantine-list.ts';
import { dynamoQuarantineRelease } from './dynamo-quarantine-release.ts';
import { dynamoQuarantineShow } from './dynamo-quarantine-show.ts';
import { dynamoDbCapacityFromFlags } from './dynamodb-capacity.ts';
import { UNSUPPORTED_COMMANDS, unsupportedCommand } from './unsupported-command.ts';

/**
 * The DynamoDB store of the ops commands: the inbox, quarantine and audit items of the worker's table (the operator's
 * credentials). `dlq peek` and `dlq redrive` join and re-arm its inbox items
 * (`dynamo-dlq-inbox.ts`), `dlq move-task` writes audit items, and `health` scans the table as the health job does;
 * `inbox purge` (TTL does its work) is refused here, naming what to use instead ({@link unsupportedCommand}), and
 * `queue status` runs without the oldest unfinished item (the table has no index by status).
 *
 * @example
 * ```ts
 * const store = dynamoOpsStore({ target: () => ({ doc, tableName: 'sqs-worker' }) });
 * await store.quarantineList({ out }, { consumer: 'case-worker' });
 * ```
 */
export function dynamoOpsStore(table: DynamoOpsTable): OpsStore {
  const dynamo = () => table.target();
  return {
    kind: 'dynamodb',
    refusal: (command) => (UNSUPPORTED_COMMANDS.includes(command) ? unsupportedCommand(command) : undefined),
    inboxShow: async (deps, options) => dynamoInboxShow({ dynamo: dynamo(), ...deps }, options),
    inboxStats: async (deps, options) => dynamoInboxStats({ dynamo: dynamo(), ...deps }, options),
    inboxCancel: async (deps, options) => dynamoInboxCancel({ dynamo: dynamo(), ...deps }, options),
    inboxHot: async (deps, options) => dynamoInboxHot({ dynamo: dynamo(), ...deps }, options),
    inboxPurge: async () => {
      throw unsupportedCommand('inbox purge');
    },
    health: async (deps, options) => dynamoHealth({ dynamo: dynamo(), ...deps }, options),
    quarantineList: async (deps, options) => dynamoQuarantineList({ dynamo: dynamo(), ...deps }, options),
    quarantineShow: async (deps, options) => dynamoQuarantineShow({ dynamo: dynamo(), ...deps }, options),
    quarantineRelease: async (deps, options) =>
      dynamoQuarantineRelease({ dynamo: dynamo(), ...deps }, options),
    capacity: (deps, input) => dynamoDbCapacityFromFlags(deps, input),
    smokeStore: (consumer) => ({ canaries: dynamoCanaryStore(dynamo(), consumer) }),
    dlqInbox: () => dynamoDlqInbox(dynamo()),
    inboxTrend: async (options) => dynamoInboxTrend(dynamo(), options),
    unfinishedInbox: () => undefined,
    auditTrail: () => dynamoAuditTrail(dynamo()),
    describeError: () => undefined,
    close: async () => table.close?.(),
  };
}
