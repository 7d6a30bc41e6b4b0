import type { MessageHandler } from '../index.ts';
import { caseDeadlineCalculationRequested } from './case-deadline-calculation-requested.ts';
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
