import { describe, expect, it } from 'vitest';
import { duplicatesCheck } from '../../tools/local/demo-scenario-checks.ts';

const duplicate = (receiveCount: number) => ({ result: 'DUPLICATE' as const, receiveCount });
const completed = (receiveCount: number) => ({ result: 'COMPLETED' as const, receiveCount });

describe('Function: duplicatesCheck()', () => {
  it('passes when every duplicate sent and every crash after commit gave one DUPLICATE', () => {
    const check = duplicatesCheck([duplicate(1), duplicate(1), duplicate(2), completed(1)], {
      duplicates: 2,
      crashes: 1,
    });

    expect(check).toMatchObject({ ok: true, detail: '3 DUPLICATE = 2 duplicates + 1 crashes after commit' });
  });

  it('counts a redelivery after the visibility timeout (a busy machine) without failing', () => {
    const check = duplicatesCheck([duplicate(1), duplicate(2), duplicate(2), duplicate(3)], {
      duplicates: 1,
      crashes: 1,
    });

    expect(check).toMatchObject({
      ok: true,
      detail:
        '4 DUPLICATE = 1 duplicates + 1 crashes after commit + 2 redelivered after the visibility timeout',
    });
  });

  it('fails a first delivery that was a DUPLICATE without being a duplicate sent', () => {
    const check = duplicatesCheck([duplicate(1), duplicate(1), duplicate(2)], { duplicates: 1, crashes: 1 });

    expect(check.ok).toBe(false);
    expect(check.detail).toContain('1 first deliveries wrongly DUPLICATE');
  });

  it('fails when a crash after commit gave no DUPLICATE on its redelivery', () => {
    const check = duplicatesCheck([duplicate(1)], { duplicates: 1, crashes: 1 });

    expect(check).toMatchObject({
      ok: false,
      detail: '1 DUPLICATE = 1 duplicates + 1 crashes after commit − 1 missing',
    });
  });
});
