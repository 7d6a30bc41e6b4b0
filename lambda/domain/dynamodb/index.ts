import type { DynamoMessageHandler } from '../../stores/dynamodb/index.ts';
import { caseDeadlineCalculationRequestedDynamo } from './case-deadline-calculation-requested.ts';
import { caseStageChangedDynamo } from './case-stage-changed.ts';
import { documentMetadataExtractionRequestedDynamo } from './document-metadata-extraction-requested.ts';
import { paymentCapturedDynamo } from './payment-captured.ts';

export { caseDeadlineCalculationRequestedDynamo } from './case-deadline-calculation-requested.ts';
export { caseItemKey, caseStageChangedDynamo } from './case-stage-changed.ts';
export {
  documentItemKey,
  documentMetadataExtractionRequestedDynamo,
} from './document-metadata-extraction-requested.ts';
export { balanceItemKey, ledgerItemKey, paymentCapturedDynamo } from './payment-captured.ts';

/** The example domain's DynamoDB handlers, as a worker with `WORKER_STORE=dynamodb` registers them. */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export const exampleDynamoHandlers: readonly DynamoMessageHandler<any>[] = [
  caseStageChangedDynamo,
  caseDeadlineCalculationRequestedDynamo,
  paymentCapturedDynamo,
  documentMetadataExtractionRequestedDynamo,
];
