import type { Segment } from 'aws-xray-sdk-core';
import type { RecordSpan, RecordTracer } from './record-tracer.ts';

/** What {@link createSegmentRecordTracer} needs of the X-Ray SDK: its segment. */
export interface SegmentFactory {
  /** `new Segment(name)` of `aws-xray-sdk-core`: a root segment, sent to the daemon when it closes. */
  readonly Segment: new (
    name: string,
  ) => Segment;
}

/**
 * A {@link RecordTracer} for a process outside Lambda (the poller on ECS): each sampled record gets an X-Ray segment
 * of its own, named `serviceName`, annotated as the Lambda worker's subsegment is (`messageId`, the producer's
 * `producerTraceId`; on close `result`, `messageType`, the producer's trace context and the failure code as
 * metadata, the error flag for a terminal outcome, the fault flag for a retryable one). Closing it sends it to the
 * X-Ray daemon (`AWS_XRAY_DAEMON_ADDRESS`, 127.0.0.1:2000 by default: the task's sidecar) over UDP.
 *
 * Why a segment per record and not a subsegment: in Lambda the invocation's segment is Lambda's own and each record
 * hangs under it; a poller has no invocation, and its records run concurrently across batches, so each is a unit of
 * work of its own, as a request is for a web server. The segment starts a trace of its own, as the Lambda
 * invocation's does, linked to the producer's by the annotation (`annotation.producerTraceId = "1-…"` finds it).
 * `sample` decides per record (the SDK's sampler: the account's sampling rules through the daemon); an unsampled
 * record gets no segment. Nothing of the payload is recorded.
 *
 * @internal
 */
export function createSegmentRecordTracer(
  xray: SegmentFactory,
  serviceName: string,
  sample: () => boolean,
): RecordTracer {
  return {
    open(record, trace): RecordSpan | undefined {
      if (!sample()) return undefined;
      const segment = new xray.Segment(serviceName);
      segment.addAnnotation('messageId', record.messageId);
      if (trace) {
        segment.addAnnotation('producerTraceId', trace.traceId);
        segment.addMetadata('producerTrace', { ...trace }, serviceName);
      }
      return {
        close(outcome) {
          segment.addAnnotation('result', outcome.result);
          if (outcome.messageType) segment.addAnnotation('messageType', outcome.messageType);
          if (outcome.failureCode) segment.addMetadata('failureCode', outcome.failureCode, serviceName);
          if (outcome.result === 'TERMINAL_FAILURE') segment.addErrorFlag();
          else if (outcome.result === 'RETRYABLE_FAILURE') segment.addFaultFlag();
          segment.close();
        },
      };
    },
  };
}
