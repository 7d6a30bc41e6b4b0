import type { SQSRecord } from 'aws-lambda';
import {
  parseTraceparent,
  parseXRayTraceHeader,
  TRACEPARENT_ATTRIBUTE,
  type TraceContext,
} from './trace-context.ts';

/**
 * The producer's trace of a record: the SQS `AWSTraceHeader` system attribute (X-Ray), else the W3C `traceparent`
 * message attribute; the trace id is in X-Ray's form either way. A missing or malformed header gives `undefined`:
 * it never fails the record, and its value is never logged (a header is producer-controlled text).
 *
 * @internal
 */
export function recordTrace(record: SQSRecord): TraceContext | undefined {
  return (
    parseXRayTraceHeader(record.attributes?.AWSTraceHeader) ??
    parseTraceparent(record.messageAttributes?.[TRACEPARENT_ATTRIBUTE]?.stringValue)
  );
}
