import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { duplicatesCheck } from '../../tools/local/demo-scenario-checks.ts';

const outcome = (result: 'DUPLICATE' | 'COMPLETED', receiveCount: number, key?: string) => {
  const messageId = randomUUID();
  return { result, receiveCount, idempotencyKey: key ?? `key-of-${messageId}`, messageId };
};
const duplicate = (receiveCount: number, key?: string) => outcome('DUPLICATE', receiveCount, key);
const completed = (receiveCount: number, key?: string) => outcome('COMPLETED', receiveCount, key);
/** A scenario message of `key`: one the outbox relays, or one sent directly. */
const message = (key: string, viaOutbox: boolean) =>
  ({ body: '{}', kind: 'normal', key, phase: 1, viaOutbox }) as const;

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

  it('counts an event the outbox relay sent again (a new message of a relayed key) as a first-delivery DUPLICATE', () => {
    // Prepare: k-1 relayed once and sent again by the relay; k-2 relayed once and sent directly once by the scenario.
    const outcomes = [
      completed(1, 'k-1'),
      duplicate(1, 'k-1'),
      completed(1, 'k-2'),
      duplicate(1, 'k-2'),
      duplicate(2, 'k-3'),
    ];

    // Act
    const check = duplicatesCheck(outcomes, {
      duplicates: 1,
      crashes: 1,
      messages: [message('k-1', true), message('k-2', true), message('k-2', false)],
    });

    // Assess
    expect(check).toMatchObject({
      ok: true,
      detail: '3 DUPLICATE = 1 duplicates + 1 crashes after commit + 1 sent again by the outbox relay',
    });
  });

  it('still fails a first-delivery DUPLICATE of a relayed key that only one message carried', () => {
    const check = duplicatesCheck([duplicate(1, 'k-1'), duplicate(1, 'k-2')], {
      duplicates: 1,
      crashes: 0,
      messages: [message('k-1', true)],
    });

    expect(check.ok).toBe(false);
    expect(check.detail).toContain('1 first deliveries wrongly DUPLICATE');
  });
});
