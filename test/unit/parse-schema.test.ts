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

  it('replaces keys that come from the input with <key> and keeps field names and array indexes', () => {
    // Prepare
    const secret = 'someone@example.com';
    const schema = z.object({
      byEmail: z.record(z.string(), z.int()),
      byCurrency: z.record(z.enum(['EUR', 'USD']), z.int()),
      lines: z.array(z.object({ sku: z.string() })),
      tree: z.optional(z.lazy(() => z.union([z.object({ leaf: z.int() }), z.record(z.string(), z.int())]))),
      byId: z.map(z.number(), z.string()),
    });

    // Act
    const parsed = parseSchema(schema, {
      byEmail: { [secret]: 'many' },
      byCurrency: { EUR: 'x', USD: 1 },
      lines: [{ sku: 'A' }, { sku: 7 }],
      tree: { [secret]: 'y' },
      byId: new Map([[4111, 1]]),
    });

    // Assess
    const error = (parsed as { error: z.core.$ZodError }).error;
    expect(error.issues.map((issue) => issue.path.join('.'))).toEqual([
      'byEmail.<key>',
      'byCurrency.EUR',
      'lines.1.sku',
      'tree',
      'byId.<key>',
    ]);
    expect(JSON.stringify(error.issues)).not.toContain(secret);
    expect(JSON.stringify(error.issues)).not.toContain('4111');
  });

  it("names the rule, not the value, even when the schema's author wrote messages that quote the input", () => {
    // Prepare
    const secret = 'card-4111111111111111';
    const schema = z.object({
      stage: z.enum(['OPEN', 'CLOSED'], { error: (issue) => `stage ${String(issue.input)} is unknown` }),
      kind: z.literal('probe'),
      code: z.string().check(
        z.refine((value) => value.startsWith('P-'), {
          error: (issue) => `code ${String(issue.input)} must start with P-`,
        }),
      ),
      options: z.strictObject({ verbose: z.boolean() }),
      period: z
        .object({ from: z.string(), to: z.string() })
        .check(
          z.refine((p) => p.from < p.to, { error: (issue) => `${JSON.stringify(issue.input)} is reversed` }),
        ),
    });

    // Act
    const parsed = parseSchema(schema, {
      stage: secret,
      kind: secret,
      code: secret,
      options: { verbose: true, [secret]: true },
      period: { from: `${secret}-b`, to: `${secret}-a` },
    });

    // Assess
    const error = (parsed as { error: z.core.$ZodError }).error;
    const text = describeIssues(error, 'payload.');
    expect(text).toBe(
      [
        'payload.stage: Invalid option: expected one of "OPEN"|"CLOSED"',
        'payload.kind: Invalid input: expected "probe"',
        'payload.code: code <value> must start with P-',
        'payload.options: Unrecognized key: 1 key the schema does not define',
        'payload.period: {"from":"<value>","to":"<value>"} is reversed',
      ].join('; '),
    );
    expect(JSON.stringify(error.issues)).not.toContain('4111');
    expect(error.message).not.toContain('4111');
  });
});
