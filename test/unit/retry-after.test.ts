import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../lambda/retry-after.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('Function: parseRetryAfter()', () => {
  it('reads delay-seconds as given', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
    expect(parseRetryAfter('007', new Date(NOW))).toBe(7);
  });

  it('reads the three HTTP-date forms as the seconds from the clock, rounded up', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', NOW)).toBe(90);
    expect(parseRetryAfter('Sunday, 01-Mar-26 12:00:10 GMT', NOW)).toBe(10);
    expect(parseRetryAfter('Sun Mar  1 12:00:05 2026', NOW)).toBe(5);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:01 GMT', NOW - 500)).toBe(2);
  });

  it('reads a date that has passed as 0', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
  });

  it('is undefined for what is not a Retry-After value', () => {
    for (const value of [
      undefined,
      null,
      '',
      '-5',
      '1.5',
      '12s',
      'soon',
      '99999999999999999999',
      'Sun, 31 Feb 2026 12:00:00 GMT',
      'Sun, 01 Mar 2026 25:00:00 GMT',
      'Sun, 01 Mar 2026 12:00:00 UTC',
      '2026-03-01T12:01:00Z',
    ]) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', Number.NaN)).toBeUndefined();
  });

  it('reads any IMF-fixdate back as the seconds to it (whole seconds, from any clock)', () => {
    fc.assert(
      fc.property(
        fc.integer({
          min: Date.parse('1990-01-01T00:00:00Z') / 1000,
          max: Date.parse('2090-01-01T00:00:00Z') / 1000,
        }),
        fc.integer({ min: 0, max: 86_400_000 }),
        (atSeconds, behindMs) => {
          const at = atSeconds * 1000;
          const now = at - behindMs;
          expect(parseRetryAfter(new Date(at).toUTCString(), now)).toBe(Math.ceil(behindMs / 1000));
        },
      ),
    );
  });

  it('reads any whole number of seconds back, and never throws on any text', () => {
    fc.assert(
      fc.property(fc.nat(), (seconds) => {
        expect(parseRetryAfter(String(seconds), NOW)).toBe(seconds);
      }),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        const parsed = parseRetryAfter(text, NOW);
        expect(parsed === undefined || (Number.isInteger(parsed) && parsed >= 0)).toBe(true);
      }),
    );
  });
});
