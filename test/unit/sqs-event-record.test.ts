import type { Message } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { recordTrace } from '../../lambda/tracing/record-trace.ts';

const SOURCE = { eventSourceArn: 'arn:aws:sqs:us-east-1:000000000000:q', awsRegion: 'us-east-1' };
const HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
const TRACEPARENT = '00-6759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01';

/** A message as ReceiveMessage returns it with MessageSystemAttributeNames and MessageAttributeNames ['All']. */
const received = (attributes: Record<string, string>, traceparent?: string): Message => ({
  MessageId: 'm-1',
  ReceiptHandle: 'rh-1',
  Body: '{}',
  MD5OfBody: '99914b932bd37a50b983c5e7c90ae93b',
  Attributes: { ApproximateReceiveCount: '1', SentTimestamp: '1796140000000', ...attributes },
  ...(traceparent
    ? { MessageAttributes: { traceparent: { DataType: 'String', StringValue: traceparent } } }
    : {}),
});

describe('Function: sqsEventRecord() — the local event source mapping passes the trace on', () => {
  it('keeps the AWSTraceHeader system attribute and the traceparent message attribute, as Lambda does', () => {
    // Act
    const record = sqsEventRecord(received({ AWSTraceHeader: HEADER }, TRACEPARENT), SOURCE);

    // Assess
    expect(record.attributes.AWSTraceHeader).toBe(HEADER);
    expect(record.messageAttributes.traceparent).toEqual({
      dataType: 'String',
      stringValue: TRACEPARENT,
      stringListValues: [],
      binaryListValues: [],
    });
    expect(recordTrace(record)?.traceId).toBe('1-5759e988-bd862e3fe1be46a994272793');
  });

  it('gives the worker the traceparent when the emulator drops the system attribute', () => {
    // Act
    const record = sqsEventRecord(received({}, TRACEPARENT), SOURCE);

    // Assess
    expect(record.attributes).not.toHaveProperty('AWSTraceHeader');
    expect(recordTrace(record)?.traceId).toBe('1-6759e988-bd862e3fe1be46a994272793');
  });
});
