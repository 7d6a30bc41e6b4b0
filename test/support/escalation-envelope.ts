import type { Envelope } from '../../lambda/worker/envelope.ts';
import { envelopeFactory } from './sqs-event.ts';

/**
 * A `CaseEscalationRequested` envelope of `caseId`, as the escalation example (`caseEscalationRequested`) consumes it:
 * key `case:<caseId>:escalation:1`, aggregate the case, notifying `duty-officer@example.com`. The handler's effect key
 * is derived from that idempotency key, so two calls for the same case are the same escalation.
 */
export function escalationEnvelope(caseId: string): Envelope {
  return envelopeFactory({
    messageType: 'CaseEscalationRequested',
    idempotencyKey: `case:${caseId}:escalation:1`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, recipient: 'duty-officer@example.com' },
  });
}
