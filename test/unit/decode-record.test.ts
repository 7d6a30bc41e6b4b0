import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { defineHandler, type MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { decodeRecord } from '../../lambda/worker/decode-record.ts';
import { createHandlerRegistry } from '../../lambda/worker/handler-registry.ts';
import { MAX_PAYLOAD_DEPTH } from '../../lambda/worker/json-depth.ts';
import { jsonWithNestedArrays, NESTED, nestedArrays } from '../support/nested-json.ts';
import { envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

/** A handler whose payload schema is recursive (any JSON): zod recurses into the whole value to check it. */
const anyJson = defineHandler({
  messageType: 'AnyJson',
  schemaVersion: 1,
  payload: z.object({ tree: z.json() }),
  async handle() {
    return undefined;
  },
});
/** A handler whose payload schema throws on a value it did not expect (a bug in the schema). */
const throwingSchema = defineHandler({
  messageType: 'ThrowingSchema',
  schemaVersion: 1,
  payload: z
    .object({ note: z.string() })
    .check(
      z.refine((payload) => (payload as unknown as { missing: { field: string } }).missing.field === 'x'),
    ),
  async handle() {
    return undefined;
  },
});
const registry = createHandlerRegistry([...exampleHandlers, anyJson, throwingSchema] as MessageHandler[]);

/** An AnyJson envelope whose payload nests `levels` levels (the payload object is level 1), and its record. */
const payloadOf = (levels: number) => {
  const envelope = envelopeFactory({ messageType: 'AnyJson', payload: { tree: NESTED } });
  return { envelope, record: sqsRecordFactory(jsonWithNestedArrays(envelope, levels - 1)) };
};

describe('Function: decodeRecord()', () => {
  it(`decodes a payload nested ${MAX_PAYLOAD_DEPTH} levels (the bound), through a recursive payload schema`, () => {
    // Prepare
    const { record } = payloadOf(MAX_PAYLOAD_DEPTH);

    // Act
    const decoded = decodeRecord(record, registry);

    // Assess
    expect(decoded).toMatchObject({ ok: true, payload: { tree: nestedArrays(MAX_PAYLOAD_DEPTH - 1) } });
  });

  it.each([MAX_PAYLOAD_DEPTH + 1, 5_000, 100_000])(
    'refuses a payload nested %i levels as PAYLOAD_TOO_DEEP, with the ids it could read, never a stack overflow',
    (levels) => {
      // Prepare
      const { envelope, record } = payloadOf(levels);

      // Act
      const decoded = decodeRecord(record, registry);

      // Assess
      expect(decoded).toEqual({
        ok: false,
        code: 'PAYLOAD_TOO_DEEP',
        message: `the body nests ${levels + 1} levels of objects and arrays, above the bound of ${MAX_PAYLOAD_DEPTH + 1} (a payload of at most ${MAX_PAYLOAD_DEPTH} levels in its envelope); flatten the payload`,
        idempotencyKey: envelope.idempotencyKey,
        messageType: 'AnyJson',
      });
    },
  );

  it('refuses a deep body of a payload schema that would not look inside it (PaymentCaptured strips unknown keys)', () => {
    // Prepare
    const envelope = envelopeFactory({
      payload: { paymentId: 'PAY-1', accountId: 'ACC-1', amount: '5.00', currency: 'EUR', extra: NESTED },
    });

    // Act
    const decoded = decodeRecord(sqsRecordFactory(jsonWithNestedArrays(envelope, 5_000)), registry);

    // Assess
    expect(decoded).toMatchObject({
      ok: false,
      code: 'PAYLOAD_TOO_DEEP',
      idempotencyKey: envelope.idempotencyKey,
    });
  });

  it('turns a throw while decoding (a payload schema that throws) into DECODE_FAILED for that record, naming the error', () => {
    // Prepare
    const envelope = envelopeFactory({ messageType: 'ThrowingSchema', payload: { note: 'n' } });

    // Act
    const decoded = decodeRecord(sqsRecordFactory(envelope), registry);

    // Assess
    expect(decoded).toMatchObject({
      ok: false,
      code: 'DECODE_FAILED',
      message:
        'decoding threw TypeError (in the payload schema of ThrowingSchema v1); fix the schema, then release or redrive the message',
      idempotencyKey: envelope.idempotencyKey,
      messageType: 'ThrowingSchema',
    });
  });
});
