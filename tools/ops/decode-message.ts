import { envelopeSchema } from '../../lambda/worker/envelope.ts';
import { describeIssues, parseSchema } from '../../lambda/worker/parse-schema.ts';

/** What an operator may see of a message body: envelope metadata only, never the payload. */
export interface DecodedMessage {
  /** True when the body is a valid envelope. */
  readonly valid: boolean;
  readonly messageType: string | undefined;
  readonly schemaVersion: number | undefined;
  readonly idempotencyKey: string | undefined;
  readonly aggregateType: string | undefined;
  readonly aggregateId: string | undefined;
  readonly correlationId: string | undefined;
  /** The envelope's own `messageId` (not the SQS one). */
  readonly envelopeMessageId: string | undefined;
  /** Why the body is not a valid envelope (paths and rules only, no values). */
  readonly problem: string | undefined;
}

const text = (value: unknown, max = 200) =>
  typeof value === 'string' && value.length > 0 ? value.slice(0, max) : undefined;

/**
 * Decodes an SQS body as an envelope. An invalid body still yields whatever metadata fields it carries, so
 * it can be grouped; the payload is never returned.
 */
export function decodeMessage(body: string | undefined): DecodedMessage {
  let json: unknown;
  try {
    json = JSON.parse(body ?? '');
  } catch {
    return {
      valid: false,
      messageType: undefined,
      schemaVersion: undefined,
      idempotencyKey: undefined,
      aggregateType: undefined,
      aggregateId: undefined,
      correlationId: undefined,
      envelopeMessageId: undefined,
      problem: 'body is not JSON',
    };
  }
  const parsed = parseSchema(envelopeSchema, json);
  const raw = (json !== null && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  return {
    valid: parsed.success,
    messageType: text(raw.messageType, 100),
    schemaVersion: typeof raw.schemaVersion === 'number' ? raw.schemaVersion : undefined,
    idempotencyKey: text(raw.idempotencyKey),
    aggregateType: text(raw.aggregateType, 100),
    aggregateId: text(raw.aggregateId),
    correlationId: text(raw.correlationId),
    envelopeMessageId: text(raw.messageId, 100),
    problem: parsed.success ? undefined : describeIssues(parsed.error),
  };
}
