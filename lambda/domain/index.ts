import { httpNotificationProvider } from '../effects/index.ts';
import type { MessageHandler } from '../index.ts';
import type { WorkerConfig } from '../runtimes/index.ts';
import { createSql } from '../stores/postgres/index.ts';
import { caseDeadlineCalculationRequested } from './case-deadline-calculation-requested.ts';
import { caseEscalationRequested } from './case-escalation-requested.ts';
import { caseStageChanged } from './case-stage-changed.ts';
import { documentMetadataExtractionRequested } from './document-metadata-extraction-requested.ts';
import { paymentCaptured } from './payment-captured.ts';

export { caseDeadlineCalculationRequested, STAGE_SLA_DAYS } from './case-deadline-calculation-requested.ts';
export { caseEscalationRequested } from './case-escalation-requested.ts';
export { caseStageChanged } from './case-stage-changed.ts';
export {
  type DocumentMetadata,
  describeDocument,
  documentMetadataExtractionRequested,
} from './document-metadata-extraction-requested.ts';
export { paymentCaptured } from './payment-captured.ts';

/** The example domain's handlers, as the deployable worker registers them. */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export const exampleHandlers: readonly MessageHandler<any>[] = [
  caseStageChanged,
  caseDeadlineCalculationRequested,
  paymentCaptured,
  documentMetadataExtractionRequested,
];

/**
 * The example domain's handlers for a PostgreSQL worker of `config`, as the shipped Lambda worker and poller register
 * them: the escalation example too when `NOTIFICATION_URL` is set (it calls an external service through the effect
 * log, which needs a connection of its own).
 */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export function exampleHandlersFor(config: WorkerConfig): readonly MessageHandler<any>[] {
  if (!config.notificationUrl) return exampleHandlers;
  return [
    ...exampleHandlers,
    caseEscalationRequested({
      effectsSql: createSql(
        { ...config.database, poolSize: 1 },
        { applicationName: `${config.consumer}-effects` },
      ),
      provider: httpNotificationProvider({ url: config.notificationUrl }),
    }),
  ];
}
