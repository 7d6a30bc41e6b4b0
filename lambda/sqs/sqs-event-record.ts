import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';

/**
 * Where the record came from, as Lambda's event source mapping reports it.
 *
 * @internal
 */
export interface SqsEventRecordSource {
  /** ARN of the queue (GetQueueAttributes `QueueArn`). */
  readonly eventSourceArn: string;
  /** Region of the queue. */
  readonly awsRegion: string;
}

const base64 = (value: Uint8Array | undefined) => (value ? Buffer.from(value).toString('base64') : undefined);

/** Converts SDK message attributes to Lambda's camelCase shape (binary values as base64 strings). */
function lambdaMessageAttributes(
  attributes: Record<string, MessageAttributeValue> | undefined,
): SQSMessageAttributes {
  const result: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    result[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { binaryValue: base64(value.BinaryValue) } : {}),
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((item) => base64(item) as string),
      dataType: value.DataType ?? 'String',
    };
  }
  return result;
}

/**
 * Builds the Lambda `SQSRecord` that the SQS event source mapping would pass for a message received with
 * `MessageSystemAttributeNames: ['All']` and `MessageAttributeNames: ['All']`: the same field names and
 * shapes as in Lambda (camelCase, attributes as strings, binary attribute values in base64, empty
 * `stringListValues`/`binaryListValues`, `eventSource: 'aws:sqs'`).
 *
 * @throws Error naming the missing field when the message lacks its id, receipt handle or system attributes
 *   (it was received without `MessageSystemAttributeNames: ['All']`).
 *
 * @internal
 */
export function sqsEventRecord(message: Message, source: SqsEventRecordSource): SQSRecord {
  const system = message.Attributes ?? {};
  const missing = ['MessageId', 'ReceiptHandle'].filter((field) => !message[field as keyof Message]);
  for (const name of ['ApproximateReceiveCount', 'SentTimestamp'] as const) {
    if (system[name] === undefined) missing.push(`Attributes.${name}`);
  }
  if (missing.length > 0) {
    throw new Error(
      `Received SQS message ${message.MessageId ?? '(no id)'} lacks ${missing.join(', ')}; receive with MessageSystemAttributeNames ['All']`,
    );
  }
  const attributes: SQSRecordAttributes = {
    ApproximateReceiveCount: system.ApproximateReceiveCount as string,
    SentTimestamp: system.SentTimestamp as string,
    SenderId: system.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp:
      system.ApproximateFirstReceiveTimestamp ?? (system.SentTimestamp as string),
  };
  for (const name of [
    'AWSTraceHeader',
    'SequenceNumber',
    'MessageGroupId',
    'MessageDeduplicationId',
    'DeadLetterQueueSourceArn',
  ] as const) {
    if (system[name] !== undefined) attributes[name] = system[name];
  }
  return {
    messageId: message.MessageId as string,
    receiptHandle: message.ReceiptHandle as string,
    body: message.Body ?? '',
    attributes,
    messageAttributes: lambdaMessageAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: source.eventSourceArn,
    awsRegion: source.awsRegion,
  };
}
