import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { SQSRecord } from 'aws-lambda';
import type { RecordOutcome } from '../worker/outcome.ts';
import type { TraceContext } from './trace-context.ts';

/**
 * The X-Ray subsegment of one record, open while it is processed.
 *
 * @internal
 */
export interface RecordSpan {
  /** Writes the record's outcome on the subsegment and closes it. Called once. */
  close(outcome: RecordOutcome): void;
}

/**
 * Opens a subsegment per record (see {@link createRecordTracer}). The engine calls it only when tracing is on.
 *
 * @internal
 */
export interface RecordTracer {
  /** The record's subsegment, or undefined when there is no segment to attach it to. */
  open(record: SQSRecord, trace: TraceContext | undefined): RecordSpan | undefined;
}

/**
 * Name of the subsegment of a record (X-Ray allows `#`, letters, digits and spaces in names).
 *
 * @internal
 */
export const RECORD_SUBSEGMENT_NAME = '## record';

/**
 * A {@link RecordTracer} on a Powertools `Tracer`: each record gets a subsegment `## record` of the invocation's
 * segment (`tracer.getSegment()`), annotated with its SQS `messageId` and, when the message carries one, the
 * producer's trace id as `producerTraceId` — the link to the producer's trace: X-Ray finds the worker side of a
 * message with the filter `annotation.producerTraceId = "1-…"`, and Lambda's own SQS trace linking shows the
 * producer's trace beside the invocation. On close it gets `result` and `messageType`, the producer's trace
 * context and the failure code as metadata, and the error flag for a terminal outcome or the fault flag for a
 * retryable one. Metadata goes under the namespace `serviceName`.
 *
 * The subsegment is never made the active segment (`tracer.setSegment`): records of one batch run concurrently, and
 * the SDK's active segment is one per process, so they would nest into each other. Calls a record makes (an S3 read)
 * therefore appear beside its subsegment, under the invocation. Nothing of the payload is recorded.
 *
 * @internal
 */
export function createRecordTracer(tracer: Tracer, serviceName: string): RecordTracer {
  return {
    open(record, trace) {
      if (!tracer.isTracingEnabled()) return undefined;
      const parent = tracer.getSegment();
      if (!parent) return undefined;
      const subsegment = parent.addNewSubsegment(RECORD_SUBSEGMENT_NAME);
      subsegment.addAnnotation('messageId', record.messageId);
      if (trace) {
        subsegment.addAnnotation('producerTraceId', trace.traceId);
        subsegment.addMetadata('producerTrace', { ...trace }, serviceName);
      }
      return {
        close(outcome) {
          subsegment.addAnnotation('result', outcome.result);
          if (outcome.messageType) subsegment.addAnnotation('messageType', outcome.messageType);
          if (outcome.failureCode) subsegment.addMetadata('failureCode', outcome.failureCode, serviceName);
          if (outcome.result === 'TERMINAL_FAILURE') subsegment.addErrorFlag();
          else if (outcome.result === 'RETRYABLE_FAILURE') subsegment.addFaultFlag();
          subsegment.close();
        },
      };
    },
  };
}
