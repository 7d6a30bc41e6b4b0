import type { MessageAttributeValue } from '@aws-sdk/client-sqs';

type AnyAttribute = {
  DataType?: string;
  StringValue?: string;
  BinaryValue?: Uint8Array | string;
  dataType?: string;
  stringValue?: string;
  binaryValue?: Uint8Array | string;
};

/**
 * Converts message attributes as received — from ReceiveMessage (`StringValue`, `DataType`) or from a
 * Lambda SQS record stored in quarantine (`stringValue`, `dataType`, base64 `binaryValue`) — into the shape
 * SendMessage accepts. List values (unsupported by SQS) are dropped.
 */
export function toSendAttributes(attributes: unknown): Record<string, MessageAttributeValue> | undefined {
  if (attributes === null || typeof attributes !== 'object') return undefined;
  const result: Record<string, MessageAttributeValue> = {};
  for (const [name, raw] of Object.entries(attributes as Record<string, AnyAttribute>)) {
    if (raw === null || typeof raw !== 'object') continue;
    const dataType = raw.DataType ?? raw.dataType;
    if (!dataType) continue;
    const stringValue = raw.StringValue ?? raw.stringValue;
    const binary = raw.BinaryValue ?? raw.binaryValue;
    if (stringValue !== undefined && stringValue !== null) {
      result[name] = { DataType: dataType, StringValue: stringValue };
    } else if (binary !== undefined && binary !== null) {
      result[name] = {
        DataType: dataType,
        BinaryValue: typeof binary === 'string' ? Buffer.from(binary, 'base64') : binary,
      };
    }
  }
  return Object.keys(result).length > 0 ? result : undefined;
}
