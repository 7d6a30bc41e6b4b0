import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { envelopeSchema } from '../../lambda/worker/envelope.ts';
import { parseSchema } from '../../lambda/worker/parse-schema.ts';

// The events/ files are what `sam local invoke -e` feeds the worker: they must be well-formed SQS events whose
// bodies are what docs/deploy.md says they are.
const load = (name: string): SQSEvent =>
  JSON.parse(readFileSync(join(import.meta.dirname, '../../events', `${name}.json`), 'utf8')) as SQSEvent;

const validMessage = (body: string): boolean => {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return false;
  }
  const envelope = parseSchema(envelopeSchema, json);
  if (!envelope.success) return false;
  const handler = exampleHandlers.find(
    (h) => h.messageType === envelope.data.messageType && h.schemaVersion === envelope.data.schemaVersion,
  );
  return handler ? parseSchema(handler.payload, envelope.data.payload).success : false;
};

describe('Sample SQS events (events/)', () => {
  it.each(['sqs-normal-batch', 'sqs-duplicate-pair', 'sqs-poison-message'])(
    '%s is a well-formed SQS event',
    (name) => {
      const event = load(name);

      for (const record of event.Records) {
        expect(record.eventSource).toBe('aws:sqs');
        expect(record.md5OfBody).toBe(createHash('md5').update(record.body).digest('hex'));
        expect(Number(record.attributes.ApproximateReceiveCount)).toBeGreaterThanOrEqual(1);
      }
      expect(new Set(event.Records.map((r) => r.messageId)).size).toBe(event.Records.length);
    },
  );

  it('holds a normal batch of valid messages of different types', () => {
    const records = load('sqs-normal-batch').Records;

    expect(records.every((r) => validMessage(r.body))).toBe(true);
    expect(new Set(records.map((r) => JSON.parse(r.body).messageType)).size).toBe(records.length);
  });

  it('holds a duplicate pair: two deliveries of one idempotency key with the same body', () => {
    const [first, second] = load('sqs-duplicate-pair').Records;

    expect(validMessage(first?.body ?? '')).toBe(true);
    expect(second?.body).toBe(first?.body);
    expect(second?.messageId).not.toBe(first?.messageId);
  });

  it('holds a poison message next to a valid one', () => {
    const records = load('sqs-poison-message').Records;

    expect(records.map((r) => validMessage(r.body))).toEqual([false, true]);
  });
});
