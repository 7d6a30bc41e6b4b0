import { afterEach, describe, expect, it } from 'vitest';
import * as classic from 'zod';
import * as z from 'zod/mini';
import { envelopeSchema } from '../../lambda/worker/envelope.ts';
import { describeIssues, parseSchema } from '../../lambda/worker/parse-schema.ts';
import { envelopeFactory } from '../support/sqs-event.ts';

describe('Function: parseSchema()', () => {
  afterEach(() => {
    z.config({ customError: undefined });
  });

  it('describes every issue in English by field, rule and bound (zod/mini loads no locale of its own)', () => {
    // Act
    const parsed = parseSchema(
      envelopeSchema,
      envelopeFactory({ idempotencyKey: 'k'.repeat(201), schemaVersion: 'x' }),
    );

    // Assess
    expect(parsed.success).toBe(false);
    expect(describeIssues((parsed as { error: z.core.$ZodError }).error)).toBe(
      'schemaVersion: Invalid input: expected number, received string; idempotencyKey: Too big: expected string to have <=200 characters',
    );
  });

  it('keeps values out of the description even when the application set a zod error map that echoes them', () => {
    // Prepare
    z.config({ customError: (issue) => `the value was ${JSON.stringify(issue.input)}` });
    const secret = 'card-4111111111111111-'.repeat(10);

    // Act
    const parsed = parseSchema(envelopeSchema, envelopeFactory({ idempotencyKey: secret }));

    // Assess
    const text = describeIssues((parsed as { error: z.core.$ZodError }).error);
    expect(text).toBe('idempotencyKey: Too big: expected string to have <=200 characters');
    expect(text).not.toContain('4111');
  });

  it('parses handler schemas written with classic zod as well as zod/mini', () => {
    // Prepare
    const classicSchema = classic.object({ caseId: classic.string().min(2) });
    const miniSchema = z.object({ caseId: z.string().check(z.minLength(2)) });

    // Act
    const results = [classicSchema, miniSchema].map((schema) => ({
      valid: parseSchema(schema, { caseId: 'CASE-1' }),
      invalid: parseSchema(schema, { caseId: 'C' }),
    }));

    // Assess
    for (const { valid, invalid } of results) {
      expect(valid).toEqual({ success: true, data: { caseId: 'CASE-1' } });
      expect(describeIssues((invalid as { error: z.core.$ZodError }).error, 'payload.')).toBe(
        'payload.caseId: Too small: expected string to have >=2 characters',
      );
    }
  });
});
