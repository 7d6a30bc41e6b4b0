import { describe, expect, it } from 'vitest';
import { envelopeSchema } from '../../lambda/worker/envelope.ts';
import { describeIssues, parseSchema } from '../../lambda/worker/parse-schema.ts';
import { envelopeFactory } from '../support/sqs-event.ts';

describe('Schema: envelopeSchema', () => {
  it('accepts the pattern document example envelope', () => {
    // Prepare
    const example = {
      messageId: 'msg_01HX',
      schemaVersion: 1,
      messageType: 'CaseDeadlineCalculationRequested',
      producer: 'case-service',
      occurredAt: '2026-07-06T10:15:30Z',
      idempotencyKey: 'case:CASE-123:deadline:v4',
      aggregateType: 'case',
      aggregateId: 'CASE-123',
      causationId: 'cmd_01HX',
      correlationId: 'trace_01HX',
      attemptPolicy: { maxBusinessAttempts: 5, notBefore: null },
      payload: { caseId: 'CASE-123', stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
    };

    // Act
    const parsed = parseSchema(envelopeSchema, example);

    // Assess
    expect(parsed.success).toBe(true);
  });

  it.each([
    ['idempotencyKey', 'k'.repeat(201)],
    ['messageType', 'T'.repeat(101)],
    ['aggregateId', 'A'.repeat(201)],
    ['schemaVersion', 0],
    ['occurredAt', 'yesterday'],
    ['payload', 'not an object'],
  ])('rejects an invalid %s and names the field, not the value', (field, value) => {
    // Act
    const parsed = parseSchema(envelopeSchema, envelopeFactory({ [field]: value }));

    // Assess
    expect(parsed.success).toBe(false);
    const text = describeIssues((parsed as { error: Parameters<typeof describeIssues>[0] }).error);
    expect(text).toContain(field);
    if (typeof value === 'string' && value.length > 20) expect(text).not.toContain(value);
  });

  it.each([
    ['idempotencyKey', 'payment:p-1\u0000'],
    ['idempotencyKey', 'payment:p-1\ud800'],
    ['messageType', 'Payment\udc00Captured'],
    ['aggregateId', '\u0000'],
    ['correlationId', 'trace\u0000'],
  ])('rejects a %s that a store cannot keep as it is (NUL, a lone surrogate), saying why', (field, value) => {
    // Act
    const parsed = parseSchema(envelopeSchema, envelopeFactory({ [field]: value }));

    // Assess
    expect(parsed.success).toBe(false);
    const text = describeIssues((parsed as { error: Parameters<typeof describeIssues>[0] }).error);
    expect(text).toContain(field);
    expect(text).toContain('without NUL');
  });

  it('accepts identifiers with any well-formed Unicode, emoji (surrogate pairs) included', () => {
    const parsed = parseSchema(envelopeSchema, envelopeFactory({ idempotencyKey: 'payment:😀:é:日本' }));
    expect(parsed.success).toBe(true);
  });

  it('requires the idempotency key', () => {
    const { idempotencyKey: _dropped, ...rest } = envelopeFactory();
    expect(parseSchema(envelopeSchema, rest).success).toBe(false);
  });

  describe('payload or payloadRef', () => {
    const ref = {
      bucket: 'case-documents',
      key: 'documents/DOC-1/original.pdf',
      sha256: 'a'.repeat(64),
      size: 10,
    };
    const withoutPayload = () => {
      const { payload: _inline, ...rest } = envelopeFactory();
      return rest;
    };

    it('accepts a payloadRef instead of a payload', () => {
      expect(parseSchema(envelopeSchema, { ...withoutPayload(), payloadRef: ref }).success).toBe(true);
    });

    it.each([
      ['both', { ...envelopeFactory(), payloadRef: ref }],
      ['neither', withoutPayload()],
    ])('rejects %s with an error naming the fix', (_name, envelope) => {
      const parsed = parseSchema(envelopeSchema, envelope);
      expect(parsed.success).toBe(false);
      expect(parsed.success ? '' : describeIssues(parsed.error)).toContain(
        'give exactly one of payload (inline) and payloadRef',
      );
    });

    it.each([
      ['sha256', { sha256: 'A'.repeat(64) }],
      ['size', { size: -1 }],
      ['bucket', { bucket: 'Bad_Bucket' }],
      ['key', { key: '' }],
    ])('rejects a payloadRef with an invalid %s', (field, change) => {
      const parsed = parseSchema(envelopeSchema, { ...withoutPayload(), payloadRef: { ...ref, ...change } });
      expect(parsed.success ? '' : describeIssues(parsed.error)).toContain(`payloadRef.${field}`);
    });
  });
});
