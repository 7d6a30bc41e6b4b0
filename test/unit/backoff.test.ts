import { describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../lambda/worker/backoff.ts';

describe('Function: backoffSeconds()', () => {
  const settings = { baseSeconds: 2, maxSeconds: 900 };

  it('caps at base × 2^(receiveCount − 1), then at maxSeconds', () => {
    const top = () => 0.9999999;
    expect([1, 2, 3, 4, 10, 20].map((count) => backoffSeconds(count, settings, top))).toEqual([
      2, 4, 8, 16, 900, 900,
    ]);
  });

  it('spreads delays over the whole range (full jitter)', () => {
    // Prepare
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };

    // Act
    const delays = Array.from({ length: 2000 }, () => backoffSeconds(5, settings, random));

    // Assess: within [0, 32], both ends reached, no value outside.
    expect(Math.min(...delays)).toBe(0);
    expect(Math.max(...delays)).toBe(32);
    expect(new Set(delays).size).toBe(33);
  });

  it('stays 15 minutes inside the 12-hour SQS limit (counted from the receive)', () => {
    expect(backoffSeconds(40, { baseSeconds: 3600, maxSeconds: 100_000 }, () => 0.9999999)).toBe(42_300);
  });
});
