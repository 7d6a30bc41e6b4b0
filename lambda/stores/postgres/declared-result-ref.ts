import type { DecodedRecord } from '../../worker/decode-record.ts';
import type { MessageHandler } from './message-handler.ts';

/** Longest result reference stored (`worker_inbox.result_ref`). */
export const RESULT_REF_MAX_LENGTH = 300;

/**
 * The result reference a record's handler declares before it runs (`MessageHandler.resultRef`), cut to 300
 * characters; null when it declares none, when the payload is still in S3, or when the declaration throws (the
 * reference `handle` returns is then stored after it, as without one).
 *
 * @internal
 */
export function declaredResultRef(message: DecodedRecord): string | null {
  // Declared by PostgreSQL handlers only (a DynamoDB handler stores the reference it returns).
  const handler = message.handler as MessageHandler;
  if (!handler.resultRef || message.pendingRef) return null;
  try {
    return handler
      .resultRef({ payload: message.payload, envelope: message.envelope })
      .slice(0, RESULT_REF_MAX_LENGTH);
  } catch {
    return null;
  }
}
