import { describe, expect, it } from 'vitest';
import { cutUtf8 } from '../../lambda/stores/dynamodb/cut-utf8.ts';
import { fitQuarantineItem } from '../../lambda/stores/dynamodb/fit-quarantine-item.ts';
import { QUARANTINE_RESERVED_BYTES } from '../../lambda/stores/dynamodb/item-bounds.ts';
import { quarantineKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { DYNAMODB_MAX_ITEM_BYTES, dynamoItemSize } from '../../lambda/stores/dynamodb/item-size.ts';
import { sqsRecordFactory } from '../support/sqs-event.ts';

const attribute = (value: string) => ({
  stringValue: value,
  stringListValues: [],
  binaryListValues: [],
  dataType: 'String',
});
const budget = DYNAMODB_MAX_ITEM_BYTES - QUARANTINE_RESERVED_BYTES;
const fitted = (record: ReturnType<typeof sqsRecordFactory>, reason = { code: 'X', message: 'x' }) =>
  fitQuarantineItem({
    key: quarantineKey('case-worker', 'h'.repeat(64)),
    consumer: 'case-worker',
    bodyHash: 'h'.repeat(64),
    record,
    reason,
    now: new Date(0).toISOString(),
  });

describe('Function: cutUtf8()', () => {
  it('returns a text that fits as it is, marker or not', () => {
    expect(cutUtf8('déjà', 6, '…')).toBe('déjà');
  });

  it('cuts at a character boundary, the marker counted in the bound', () => {
    expect(cutUtf8('déjà vu', 6, '…')).toBe('dé…');
    expect(cutUtf8('déjà vu', 5, '…')).toBe('d…');
    expect(cutUtf8('😀😀', 7)).toBe('😀');
    expect(Buffer.byteLength(cutUtf8('€'.repeat(1000), 100, '…'))).toBeLessThanOrEqual(100);
  });
});

describe('Function: fitQuarantineItem()', () => {
  it('keeps everything of a message that fits, dropping nothing', () => {
    // Prepare
    const record = sqsRecordFactory('{"a":1}', { messageAttributes: { tenant: attribute('acme') } });

    // Act
    const { attributes, size } = fitted(record);

    // Assess
    expect(attributes).toMatchObject({
      body: '{"a":1}',
      bodyTruncated: false,
      messageAttributesDropped: [],
      sqsAttributesDropped: [],
    });
    expect(JSON.parse(String(attributes.messageAttributes))).toEqual({ tenant: attribute('acme') });
    expect(size).toBeLessThan(2_000);
  });

  it('drops the largest message attributes first, only as many as it must, and names them', () => {
    // Prepare: 290 KiB of body leaves ~100 KB: of 60, 50 and 40 KB attributes, the 60 KB one goes
    const record = sqsRecordFactory('b'.repeat(290 * 1024), {
      messageAttributes: {
        small: attribute('s'),
        forty: attribute('4'.repeat(40_000)),
        sixty: attribute('6'.repeat(60_000)),
        fifty: attribute('5'.repeat(50_000)),
      },
    });

    // Act
    const { attributes, size } = fitted(record);

    // Assess
    expect(attributes.messageAttributesDropped).toEqual(['sixty']);
    expect(Object.keys(JSON.parse(String(attributes.messageAttributes))).sort()).toEqual([
      'fifty',
      'forty',
      'small',
    ]);
    expect(size).toBeLessThanOrEqual(budget);
  });

  it('drops SQS attributes only once no message attribute is left', () => {
    // Prepare
    const record = sqsRecordFactory('b'.repeat(300 * 1024), {
      attributes: { ...sqsRecordFactory('').attributes, AWSTraceHeader: 't'.repeat(120_000) },
      messageAttributes: { big: attribute('m'.repeat(20_000)) },
    });

    // Act
    const { attributes, size } = fitted(record);

    // Assess
    expect(attributes.messageAttributesDropped).toEqual(['big']);
    expect(attributes.sqsAttributesDropped).toEqual(['AWSTraceHeader']);
    expect(attributes.sqsAttributes).toMatchObject({ ApproximateReceiveCount: '1' });
    expect(size).toBeLessThanOrEqual(budget);
  });

  it('lists at most 10 dropped names, each cut, then how many more', () => {
    // Prepare: room for 2 of 14 attributes of 40 KB
    const record = sqsRecordFactory('b'.repeat(300 * 1024), {
      messageAttributes: Object.fromEntries(
        Array.from({ length: 14 }, (_, i) => [
          `${String(i).padStart(2, '0')}${'n'.repeat(400)}`,
          attribute('v'.repeat(40_000)),
        ]),
      ),
    });

    // Act
    const dropped = fitted(record).attributes.messageAttributesDropped as string[];

    // Assess
    expect(dropped).toHaveLength(11);
    expect(dropped.slice(0, 10).every((name) => Buffer.byteLength(name) <= 256 && name.endsWith('…'))).toBe(
      true,
    );
    expect(dropped[10]).toBe('… 2 more');
  });

  it("cuts a body past 300 KiB and a reason's code and message past their bounds, with the SHA-256 of the whole body kept by the caller", () => {
    // Prepare
    const record = sqsRecordFactory('€'.repeat(400 * 1024));

    // Act
    const { attributes } = fitted(record, { code: 'C'.repeat(1000), message: 'é'.repeat(10_000) });

    // Assess
    expect(attributes.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(String(attributes.body))).toBeLessThanOrEqual(300 * 1024);
    expect(String(attributes.body)).toMatch(/^€+$/); // never half a character
    expect(String(attributes.reasonCode)).toMatch(/^C{397}…$/);
    expect(Buffer.byteLength(String(attributes.reasonMessage))).toBeLessThanOrEqual(4096);
    expect(String(attributes.reasonMessage).endsWith('…')).toBe(true);
  });

  it('counts its size as dynamoItemSize counts the item it writes', () => {
    // Prepare
    const record = sqsRecordFactory('b'.repeat(1000), { messageAttributes: { a: attribute('x') } });
    const key = quarantineKey('case-worker', 'h'.repeat(64));

    // Act
    const { attributes, size } = fitted(record);

    // Assess: the item as written, with the largest occurrences count it allows for
    expect(size).toBe(
      dynamoItemSize({
        ...key,
        ...attributes,
        firstQuarantinedAt: new Date(0).toISOString(),
        occurrences: Number.MAX_SAFE_INTEGER,
      }),
    );
  });
});
