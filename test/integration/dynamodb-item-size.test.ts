import { createHash, randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../lambda/errors.ts';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { inboxKey, quarantineKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { DYNAMODB_MAX_ITEM_BYTES, dynamoItemSize } from '../../lambda/stores/dynamodb/item-size.ts';
import { quarantineUpdate } from '../../lambda/stores/dynamodb/quarantine-update.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

const dynamo = useTestDynamoDb();
let table: string;

beforeAll(async () => {
  table = await dynamo.createTable('size');
});

const getItem = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
const hashOf = (body: string) => createHash('sha256').update(body).digest('hex');
/** A message attribute as Lambda delivers it. */
const stringAttribute = (value: string) => ({
  stringValue: value,
  stringListValues: [],
  binaryListValues: [],
  dataType: 'String',
});
/** The error a put or update fails with, or 'stored'. */
const outcomeOf = (write: Promise<unknown>) =>
  write.then(
    () => 'stored',
    (error: Error) => `${error.name}: ${error.message}`,
  );

describe('Function: dynamoItemSize()', () => {
  // Each value next to a filler string that brings the item to exactly the limit by dynamoItemSize's count.
  const samples: [string, unknown][] = [
    ['an ASCII string', 'abc'],
    ['a string of 2-, 3- and 4-byte characters', 'é€😀'],
    ['an empty string', ''],
    ['a one-digit number', 1],
    ['a two-digit number', 12],
    ['a three-digit number', 123],
    ['a number with trailing zeros', 1200],
    ['a small fraction', 0.0012],
    ['a number with a fraction', 123.456],
    ['a negative number', -5],
    ['zero', 0],
    ['the largest safe integer', Number.MAX_SAFE_INTEGER],
    ['a boolean', true],
    ['null', null],
    ['binary (its raw bytes, not base64)', new Uint8Array([1, 2, 3, 4, 5])],
    ['an empty list', []],
    ['a list', ['a', 7, false, ['nested']]],
    ['a map with a multibyte key', { clé: 'valeur', n: 42, inner: { deep: [null] } }],
  ];

  it.each(samples)(
    'counts %s as DynamoDB Local does: 400 KB stored, one byte more refused',
    async (_label, value) => {
      // Prepare: a multibyte attribute name too
      const pk = `SIZE#${randomUUID()}`;
      const bare = { PK: pk, SK: 'X', 'valeur-é': value, filler: '' };
      const fillerBytes = DYNAMODB_MAX_ITEM_BYTES - dynamoItemSize(bare);
      const atLimit = { ...bare, filler: 'f'.repeat(fillerBytes) };
      const overLimit = { ...bare, PK: `${pk}-over`, filler: 'f'.repeat(fillerBytes - 4) };

      // Act
      const stored = await outcomeOf(dynamo.doc.send(new PutCommand({ TableName: table, Item: atLimit })));
      const refused = await outcomeOf(dynamo.doc.send(new PutCommand({ TableName: table, Item: overLimit })));

      // Assess: overLimit is one byte over (its PK is 5 bytes longer, its filler 4 shorter)
      expect(dynamoItemSize(atLimit)).toBe(DYNAMODB_MAX_ITEM_BYTES);
      expect(dynamoItemSize(overLimit)).toBe(DYNAMODB_MAX_ITEM_BYTES + 1);
      expect(stored).toBe('stored');
      expect(refused).toBe('ValidationException: Item size has exceeded the maximum allowed size');
    },
  );

  it('counts an update the same way: the item as it would be after the update', async () => {
    // Prepare
    const key = { PK: `SIZE#${randomUUID()}`, SK: 'X' };
    await dynamo.doc.send(new PutCommand({ TableName: table, Item: { ...key, kept: 'k'.repeat(1000) } }));
    const fillerBytes =
      DYNAMODB_MAX_ITEM_BYTES - dynamoItemSize({ ...key, kept: 'k'.repeat(1000), filler: '' });
    const update = (bytes: number) =>
      outcomeOf(
        dynamo.doc.send(
          new UpdateCommand({
            TableName: table,
            Key: key,
            UpdateExpression: 'SET filler = :filler',
            ExpressionAttributeValues: { ':filler': 'f'.repeat(bytes) },
          }),
        ),
      );

    // Act
    const refused = await update(fillerBytes + 1);
    const stored = await update(fillerBytes);

    // Assess
    expect(refused).toBe('ValidationException: Item size to update has exceeded the maximum allowed size');
    expect(stored).toBe('stored');
    expect(dynamoItemSize((await getItem(key)) ?? {})).toBe(DYNAMODB_MAX_ITEM_BYTES);
  });
});

describe('Quarantine items within DynamoDB’s 400 KB', () => {
  /** A handler that rejects every message terminally (its code given by the payload, when it gives one). */
  const rejecting = () => {
    let calls = 0;
    const handler = defineDynamoHandler({
      messageType: 'NoteRejected',
      schemaVersion: 1,
      payload: z.object({ note: z.string(), code: z.optional(z.string()) }),
      async handle({ payload }) {
        calls += 1;
        throw new TerminalError(payload.code ?? 'NOTE_REJECTED', 'the note is rejected');
      },
    });
    return { handler, calls: () => calls };
  };
  /** An envelope of at least `bytes` bytes (its note fills it up). */
  const noteEnvelope = (bytes: number, payload: Record<string, unknown> = {}) => {
    const envelope = envelopeFactory({ messageType: 'NoteRejected', payload: { note: '', ...payload } });
    const note = 'n'.repeat(Math.max(0, bytes - Buffer.byteLength(JSON.stringify(envelope))));
    return envelopeFactory({ ...envelope, payload: { ...envelope.payload, note } });
  };
  /** A small attribute and one of 150 KB: with a 290 KiB body, more than an item holds. */
  const largeAttributes = () => ({
    tenant: stringAttribute('acme'),
    big: stringAttribute('b'.repeat(150_000)),
  });

  it('quarantines a terminal message whose body (290 KiB) and message attributes pass 400 KB: the large attribute is dropped and named, the record acknowledged, a redelivery terminal again', async () => {
    // Prepare
    const { handler, calls } = rejecting();
    const process = dynamoProcessor(dynamo, table, [handler]);
    const envelope = noteEnvelope(290 * 1024);
    const body = JSON.stringify(envelope);
    const record = (receiveCount: number) =>
      sqsRecordFactory(body, { receiveCount, messageAttributes: largeAttributes() });

    // Act
    const first = await process(record(1));
    const again = await process(record(2));

    // Assess
    expect(Buffer.byteLength(body) + 150_000).toBeGreaterThan(DYNAMODB_MAX_ITEM_BYTES);
    expect(first).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'NOTE_REJECTED',
      acknowledged: true,
      quarantined: true,
    });
    expect(again).toMatchObject({ result: 'TERMINAL_FAILURE', acknowledged: true, quarantined: true });
    expect(calls()).toBe(1);
    expect(await getItem(inboxKey('case-worker', envelope.idempotencyKey))).toMatchObject({
      status: 'FAILED_TERMINAL',
      attempts: 1,
      failureCode: 'NOTE_REJECTED',
    });
    const item = await getItem(quarantineKey('case-worker', hashOf(body)));
    expect(item).toMatchObject({
      body,
      bodyTruncated: false,
      messageAttributesDropped: ['big'],
      sqsAttributesDropped: [],
      reasonCode: 'NOTE_REJECTED',
      idempotencyKey: envelope.idempotencyKey,
      occurrences: 2,
    });
    expect(JSON.parse(String(item?.messageAttributes))).toEqual({ tenant: stringAttribute('acme') });
    expect(item?.sqsAttributes).toMatchObject({ ApproximateReceiveCount: '2' });
    expect(dynamoItemSize(item ?? {})).toBeLessThanOrEqual(DYNAMODB_MAX_ITEM_BYTES);
  });

  it('does the same for a body that is not JSON (quarantined before any inbox item)', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, [rejecting().handler]);
    const body = `${'x'.repeat(290 * 1024)} not json ${randomUUID()}`;
    const record = () => sqsRecordFactory(body, { messageAttributes: largeAttributes() });

    // Act
    const outcomes = [await process(record()), await process(record())];

    // Assess
    expect(outcomes.map((o) => [o.result, o.failureCode, o.acknowledged, o.quarantined])).toEqual([
      ['TERMINAL_FAILURE', 'INVALID_JSON', true, true],
      ['TERMINAL_FAILURE', 'INVALID_JSON', true, true],
    ]);
    expect(await getItem(quarantineKey('case-worker', hashOf(body)))).toMatchObject({
      body,
      bodyTruncated: false,
      messageAttributesDropped: ['big'],
      occurrences: 2,
    });
  });

  it("keeps a handler's failure code of 450 KB cut on the inbox and quarantine items: terminal and acknowledged", async () => {
    // Prepare
    const { handler } = rejecting();
    const process = dynamoProcessor(dynamo, table, [handler]);
    const code = `HUGE_${'C'.repeat(450_000)}`;
    const envelope = noteEnvelope(2_000, { code });

    // Act
    const outcome = await process(sqsRecordFactory(envelope));

    // Assess
    // The engine keeps a handler's code to 100 characters, as PostgreSQL's columns do.
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      acknowledged: true,
      quarantined: true,
      failureCode: code.slice(0, 100),
    });
    const inbox = await getItem(inboxKey('case-worker', envelope.idempotencyKey));
    expect(inbox).toMatchObject({ status: 'FAILED_TERMINAL', failureCode: code.slice(0, 100) });
    const item = await getItem(quarantineKey('case-worker', hashOf(JSON.stringify(envelope))));
    expect(String(item?.reasonCode)).toBe(inbox?.failureCode);
  });

  it('fits every part at its largest — a 1 MiB body, message and SQS attributes, a 1 MB reason — after a release wrote its own attributes', async () => {
    // Prepare: 4-byte characters everywhere a producer or a handler chooses the text
    const wide = (n: number) => '😀'.repeat(n);
    const consumer = wide(100); // WORKER_CONSUMER allows 100 characters
    const record: SQSRecord = sqsRecordFactory(wide(256 * 1024), {
      messageId: wide(100),
      eventSourceARN: wide(2048),
      attributes: {
        ...sqsRecordFactory('').attributes,
        MessageGroupId: wide(128),
        AWSTraceHeader: wide(50_000),
      },
      messageAttributes: Object.fromEntries(
        Array.from({ length: 12 }, (_, i) => [`${i}${wide(255)}`, stringAttribute(wide(20_000))]),
      ),
    });
    const reason = {
      code: wide(250_000),
      message: wide(250_000),
      idempotencyKey: wide(200),
      messageType: wide(100),
    };
    const { store } = dynamoProcessor(dynamo, table, [rejecting().handler]);
    const update = () => quarantineUpdate(store, { consumer, record, reason, nowMs: Date.now() });
    const key = update().Key;
    await dynamo.doc.send(new UpdateCommand(update()));
    await dynamo.doc.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        UpdateExpression:
          'SET releasedAt = :at, releasedMessageId = :mid, releasedBy = :actor, releaseClaim = :claim',
        ExpressionAttributeValues: {
          ':at': new Date().toISOString(),
          ':mid': wide(100),
          ':actor': wide(200),
          ':claim': {
            token: randomUUID(),
            actor: wide(200),
            at: new Date().toISOString(),
            expiresAt: Date.now(),
          },
        },
      }),
    );

    // Act: quarantined again after the release
    const again = await outcomeOf(dynamo.doc.send(new UpdateCommand(update())));

    // Assess
    expect(again).toBe('stored');
    const item = (await getItem(key)) ?? {};
    expect(dynamoItemSize(item)).toBeLessThanOrEqual(DYNAMODB_MAX_ITEM_BYTES);
    expect(item).toMatchObject({ bodyTruncated: true, occurrences: 2 });
    expect(item.messageAttributesDropped).toHaveLength(11); // 10 names and how many more
    expect(String(item.reasonMessage).endsWith('…')).toBe(true);
    expect(item.releasedBy).toBe(wide(200));
  });
});
