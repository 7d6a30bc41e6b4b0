import { describe, expect, it } from 'vitest';
import { redactValues } from '../../lambda/worker/redact-values.ts';

describe('Function: redactValues()', () => {
  it('replaces the string and number leaves of the input that the text quotes', () => {
    // Prepare
    const payload = { caseId: 'CASE-7', owner: { email: 'someone@example.com' }, amounts: [1250, 3] };

    // Act
    const text = redactValues(
      'case CASE-7 of someone@example.com: amount 1250 is over 12500 (3 tries)',
      payload,
    );

    // Assess: 1250 only as a whole number, 3 too short to be told from the text around it
    expect(text).toBe('case <value> of <value>: amount <value> is over 12500 (3 tries)');
  });

  it('replaces the longest value first and never inside a placeholder it wrote', () => {
    // Act
    const text = redactValues('stage INVESTIGATION-A is not allowed', ['INVESTIGATION-A', 'INVEST', 'alu']);

    // Assess
    expect(text).toBe('stage <value> is not allowed');
  });

  it('leaves keys, which name fields, and texts without values as they are', () => {
    // Act
    const text = redactValues('from must be before to', { from: '2026-01-02', to: '2026-01-01' });

    // Assess
    expect(text).toBe('from must be before to');
  });

  it('takes a primitive input as the value itself, and regular-expression characters literally', () => {
    // Act
    const text = redactValues('code a.b*(c) must start with P-', 'a.b*(c)');

    // Assess
    expect(text).toBe('code <value> must start with P-');
  });
});
