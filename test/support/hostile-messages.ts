import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';

/**
 * What a message of a property run must end as:
 * - `applied`: its payment's effect exactly once (a good message, whatever else is in its batch);
 * - `quarantined`: terminal, in the quarantine with a code, acknowledged — never in the DLQ;
 * - `settled`: either of the two (content whose fate depends on the store, e.g. a NUL character that PostgreSQL
 *   text cannot hold and DynamoDB can), but never in the DLQ and never applied twice.
 * Messages of one `group` share an idempotency key with different payloads: exactly one of them is applied, the
 * others are quarantined.
 */
export type Expectation = 'applied' | 'quarantined' | 'settled';

/** A message attribute as SQS delivers it to Lambda. */
export interface RecordAttribute {
  readonly dataType: 'String' | 'Number' | 'Binary';
  readonly stringValue?: string;
  readonly binaryValue?: string;
}

/** One message of a property run, with what it must end as. */
export interface HostileMessage {
  readonly kind: string;
  readonly body: string;
  readonly messageAttributes: Record<string, RecordAttribute>;
  readonly expect: Expectation;
  /** The payment whose effect counts (`applied`, `settled`). */
  readonly paymentId?: string;
  /** A unique account per payment: DynamoDB's balance item counts the additions. */
  readonly accountId?: string;
  readonly group?: string;
  /** The slow payment of a run with a slow record: its first delivery outlasts the invocation. */
  readonly slow?: boolean;
}

/** The message types a property run's good messages use (the store's payment handler, the slow one). */
export interface GoodTypes {
  readonly payment: string;
  readonly slowPayment: string;
}

/** A message to build, as fast-check generates it: no identifiers yet (they are fresh for every run). */
export type MessageSpec =
  | { readonly kind: 'good'; readonly duplicates: number; readonly jsonKeyTwice: boolean }
  | { readonly kind: 'not-json'; readonly text: string }
  | { readonly kind: 'random-json'; readonly value: unknown }
  | { readonly kind: 'random-payload'; readonly payload: unknown }
  | { readonly kind: 'deep'; readonly depth: number; readonly objects: boolean }
  | {
      readonly kind: 'huge-string';
      readonly field: 'payload' | 'idempotencyKey' | 'producer';
      readonly length: number;
    }
  | { readonly kind: 'wrong-type'; readonly field: string; readonly value: unknown }
  | { readonly kind: 'escapes'; readonly where: 'idempotencyKey' | 'accountId'; readonly text: string }
  | { readonly kind: 'reused-key'; readonly copies: number };

/** One spec and the attributes its messages carry. */
export interface MessageCase {
  readonly spec: MessageSpec;
  readonly attributes: Record<string, RecordAttribute>;
}

// Characters SQS accepts in a body (#x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF): anything
// else is refused by SendMessage, so no runtime ever delivers it. JSON escapes of any character are accepted.
const sqsSafe = (text: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters SQS refuses
  text.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/g, '?');

const ENVELOPE_FIELDS = [
  'messageId',
  'schemaVersion',
  'messageType',
  'producer',
  'occurredAt',
  'idempotencyKey',
  'aggregateType',
  'aggregateId',
  'correlationId',
  'attemptPolicy',
  'payload',
] as const;

/** Values of the wrong type for any envelope field (null, numbers, strings, arrays, objects, booleans). */
const wrongValue = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.string({ maxLength: 20 }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** Text with the characters a store may refuse: NUL, lone surrogates (JSON-escaped in the body), emoji. */
const awkwardText = fc
  .array(fc.constantFrom('\u0000', '\ud800', '\udfff', '😀', 'é', '"', '\\', '\n', 'x'), {
    minLength: 1,
    maxLength: 6,
  })
  .map((parts) => parts.join(''));

/** Message attributes: up to 10 (SQS's limit), names and values of any printable text, some large. */
export const attributesArb: fc.Arbitrary<Record<string, RecordAttribute>> = fc
  .array(
    fc.tuple(
      fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
      fc.oneof(
        fc
          .string({ maxLength: 50 })
          .map((value) => ({ dataType: 'String' as const, stringValue: sqsSafe(value) || 'v' })),
        fc.integer({ min: 1_000, max: 20_000 }).map((length) => ({
          dataType: 'String' as const,
          stringValue: 'a'.repeat(length),
        })),
        fc.integer().map((value) => ({ dataType: 'Number' as const, stringValue: String(value) })),
        fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({
          dataType: 'Binary' as const,
          binaryValue: Buffer.from(bytes).toString('base64'),
        })),
      ),
    ),
    { maxLength: 10 },
  )
  .map((entries) => Object.fromEntries(entries));

/** A hostile message (anything but a good one). */
export const hostileSpecArb: fc.Arbitrary<MessageSpec> = fc.oneof(
  fc
    .string({ maxLength: 200 })
    .filter((text) => {
      try {
        JSON.parse(text);
        return false;
      } catch {
        return true;
      }
    })
    .map((text) => ({ kind: 'not-json' as const, text: sqsSafe(text) || '{' })),
  fc.jsonValue({ maxDepth: 6 }).map((value) => ({ kind: 'random-json' as const, value })),
  fc.jsonValue({ maxDepth: 6 }).map((payload) => ({ kind: 'random-payload' as const, payload })),
  fc.record({
    kind: fc.constant('deep' as const),
    depth: fc.oneof(fc.integer({ min: 30, max: 200 }), fc.integer({ min: 1_000, max: 20_000 })),
    objects: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('huge-string' as const),
    field: fc.constantFrom('payload' as const, 'idempotencyKey' as const, 'producer' as const),
    length: fc.integer({ min: 10_000, max: 200_000 }),
  }),
  fc.record({
    kind: fc.constant('wrong-type' as const),
    field: fc.constantFrom(...ENVELOPE_FIELDS),
    value: wrongValue,
  }),
  fc.record({
    kind: fc.constant('escapes' as const),
    where: fc.constantFrom('idempotencyKey' as const, 'accountId' as const),
    text: awkwardText,
  }),
  fc.record({ kind: fc.constant('reused-key' as const), copies: fc.integer({ min: 2, max: 3 }) }),
);

/** A good payment, sent 1–3 times, sometimes with a JSON key written twice (the last one counts, as in JSON.parse). */
export const goodSpecArb: fc.Arbitrary<MessageSpec> = fc.record({
  kind: fc.constant('good' as const),
  duplicates: fc.integer({ min: 0, max: 2 }),
  jsonKeyTwice: fc.boolean(),
});

/** A batch's worth of message cases: good and hostile ones mixed, 2–14 of them (so up to two batches of 10). */
export const messageCasesArb: fc.Arbitrary<MessageCase[]> = fc.array(
  fc.record({
    spec: fc.oneof({ weight: 2, arbitrary: goodSpecArb }, { weight: 3, arbitrary: hostileSpecArb }),
    attributes: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: attributesArb }),
  }),
  { minLength: 2, maxLength: 10 },
);

const payment = (messageType: string, idempotencyKey?: string, accountId?: string) => {
  const paymentId = `PAY-${randomUUID()}`;
  const account = accountId ?? `ACC-${randomUUID()}`;
  return {
    paymentId,
    accountId: account,
    envelope: exampleEnvelope({
      messageType,
      idempotencyKey: idempotencyKey ?? `payment:${paymentId}`,
      aggregateType: 'Payment',
      aggregateId: paymentId,
      payload: { paymentId, accountId: account, amount: '10.50', currency: 'EUR' },
    }),
  };
};

const nested = (depth: number, objects: boolean) =>
  objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`;

/**
 * The messages of one case, with fresh identifiers (runs share a database, so no two runs share a key). The body
 * of a deep payload is written as text: building it as an object and stringifying it would overflow the stack here.
 */
export function buildMessages(item: MessageCase, types: GoodTypes): HostileMessage[] {
  const { spec, attributes } = item;
  const one = (body: string, expect: Expectation, extra: Partial<HostileMessage> = {}): HostileMessage => ({
    kind: spec.kind,
    body,
    messageAttributes: attributes,
    expect,
    ...extra,
  });
  switch (spec.kind) {
    case 'good': {
      const { paymentId, accountId, envelope } = payment(types.payment);
      const text = JSON.stringify(envelope);
      const body = spec.jsonKeyTwice
        ? `{"payload":{"paymentId":"other"},${text.slice(1)}` // the later `payload` wins
        : text;
      return Array.from({ length: 1 + spec.duplicates }, () =>
        one(body, 'applied', { paymentId, accountId }),
      );
    }
    case 'not-json':
      return [one(spec.text, 'quarantined')];
    case 'random-json':
      return [one(JSON.stringify(spec.value) ?? 'null', 'quarantined')];
    case 'random-payload': {
      const { envelope } = payment(types.payment);
      return [one(JSON.stringify({ ...envelope, payload: spec.payload }), 'quarantined')];
    }
    case 'deep': {
      const { envelope } = payment(types.payment);
      const text = JSON.stringify({ ...envelope, payload: 'DEEP' });
      return [one(text.replace('"DEEP"', nested(spec.depth, spec.objects)), 'quarantined')];
    }
    case 'huge-string': {
      const { envelope } = payment(types.payment);
      const huge = 'x'.repeat(spec.length);
      const value = spec.field === 'payload' ? { ...envelope.payload, note: huge } : huge;
      // A payment with an extra field is still a payment (the schema ignores unknown fields): applied.
      return [
        one(
          JSON.stringify({ ...envelope, [spec.field]: value }),
          spec.field === 'payload' ? 'applied' : 'quarantined',
          {
            ...(spec.field === 'payload'
              ? {
                  paymentId: (envelope.payload as { paymentId: string }).paymentId,
                  accountId: (envelope.payload as { accountId: string }).accountId,
                }
              : {}),
          },
        ),
      ];
    }
    case 'wrong-type': {
      // Some fields take null or any string (correlationId, messageId): the message may still be a good payment.
      const { paymentId, accountId, envelope } = payment(types.payment);
      return [
        one(JSON.stringify({ ...envelope, [spec.field]: spec.value }), 'settled', { paymentId, accountId }),
      ];
    }
    case 'escapes': {
      const { paymentId, accountId, envelope } = payment(types.payment);
      const body =
        spec.where === 'idempotencyKey'
          ? { ...envelope, idempotencyKey: `${envelope.idempotencyKey}:${spec.text}` }
          : { ...envelope, payload: { ...envelope.payload, accountId: `${accountId}${spec.text}` } };
      return [
        one(JSON.stringify(body), 'settled', {
          paymentId,
          accountId: spec.where === 'accountId' ? `${accountId}${spec.text}` : accountId,
        }),
      ];
    }
    case 'reused-key': {
      const group = `payment:reused:${randomUUID()}`;
      return Array.from({ length: spec.copies }, () => {
        const { paymentId, accountId, envelope } = payment(types.payment, group);
        return one(JSON.stringify(envelope), 'settled', { paymentId, accountId, group });
      });
    }
  }
}

/** The slow payment of a run with a slow record: a good message whose first delivery outlasts its invocation. */
export function slowMessage(types: GoodTypes): HostileMessage {
  const { paymentId, accountId, envelope } = payment(types.slowPayment);
  return {
    kind: 'slow',
    body: JSON.stringify(envelope),
    messageAttributes: {},
    expect: 'applied',
    paymentId,
    accountId,
    slow: true,
  };
}

/** The order of a run's messages: a permutation from fast-check's seed (duplicates may land in one batch or two). */
export function shuffled<T>(items: readonly T[], order: readonly number[]): T[] {
  const keyed = items.map((item, index) => ({
    item,
    key: order[index % Math.max(1, order.length)] ?? index,
    index,
  }));
  return keyed.sort((a, b) => a.key - b.key || a.index - b.index).map(({ item }) => item);
}
