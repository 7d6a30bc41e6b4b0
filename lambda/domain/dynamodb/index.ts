import type { WorkerConfig } from '../../config.ts';
import { httpNotificationProvider } from '../../effects/http-notification-provider.ts';
import { DEFAULT_QUEUE_RETENTIONS, inboxTtlSeconds } from '../../stores/dynamodb/inbox-ttl.ts';
import type { DynamoMessageHandler } from '../../stores/dynamodb/index.ts';
import { caseDeadlineCalculationRequestedDynamo } from './case-deadline-calculation-requested.ts';
import { caseEscalationRequestedDynamo } from './case-escalation-requested.ts';
import { caseStageChangedDynamo } from './case-stage-changed.ts';
import { documentMetadataExtractionRequestedDynamo } from './document-metadata-extraction-requested.ts';
import { paymentCapturedDynamo } from './payment-captured.ts';

export { caseDeadlineCalculationRequestedDynamo } from './case-deadline-calculation-requested.ts';
export {
  type CaseEscalationRequestedDynamoDependencies,
  caseEscalationRequestedDynamo,
  notificationItemKey,
} from './case-escalation-requested.ts';
export { caseItemKey, caseStageChangedDynamo } from './case-stage-changed.ts';
export {
  documentItemKey,
  documentMetadataExtractionRequestedDynamo,
} from './document-metadata-extraction-requested.ts';
export { balanceItemKey, ledgerItemKey, paymentCapturedDynamo } from './payment-captured.ts';

/** The example domain's DynamoDB handlers without external effects, as a worker with `WORKER_STORE=dynamodb` registers them. */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export const exampleDynamoHandlers: readonly DynamoMessageHandler<any>[] = [
  caseStageChangedDynamo,
  caseDeadlineCalculationRequestedDynamo,
  paymentCapturedDynamo,
  documentMetadataExtractionRequestedDynamo,
];

/**
 * The example domain's handlers for a DynamoDB worker of `config`, as the shipped Lambda worker and poller register
 * them (`exampleHandlersFor` on PostgreSQL): the escalation example too when `NOTIFICATION_URL` is set, its effect log
 * items living as long as the inbox items (the TTL of `RETENTION_SOURCE_SECONDS` + `RETENTION_DLQ_SECONDS` + a day).
 */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export function exampleDynamoHandlersFor(config: WorkerConfig): readonly DynamoMessageHandler<any>[] {
  if (!config.notificationUrl) return exampleDynamoHandlers;
  const retention =
    (config.store.kind === 'dynamodb' ? config.store.retention : undefined) ?? DEFAULT_QUEUE_RETENTIONS;
  return [
    ...exampleDynamoHandlers,
    caseEscalationRequestedDynamo({
      provider: httpNotificationProvider({ url: config.notificationUrl }),
      effectLogTtlSeconds: inboxTtlSeconds(retention),
    }),
  ];
}
