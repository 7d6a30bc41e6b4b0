import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TREND_THRESHOLDS, type TrendFlow, trendVerdict } from '../../tools/ops/trend-verdict.ts';

/** Twelve periods: eight of the baseline, four recent (the last quarter). */
const series = (baseline: Partial<TrendFlow>, recent: Partial<TrendFlow>, count = 12): TrendFlow[] =>
  Array.from({ length: count }, (_, i) => ({
    sent: 100,
    consumed: 100,
    p99Ms: 200,
    visible: 50,
    ...(i < count - Math.max(1, Math.floor(count / 4)) ? baseline : recent),
  }));

const aws = (periods: TrendFlow[], backlogNow = 50) =>
  trendVerdict({ periods, backlogNow, consumedName: 'deleted' });

describe('Function: trendVerdict()', () => {
  it('calls a producer spike when sent rises while deleted holds', () => {
    // Act
    const verdict = aws(series({}, { sent: 250, consumed: 104 }), 900);

    // Assess
    expect(verdict.kind).toBe('producer-spike');
    expect(verdict.line).toMatch(
      /^producer spike: sent \+150% \(100\/period → 250\/period\) while deleted held \(\+4%/,
    );
    expect(verdict.line).toContain('900 visible now');
    expect(verdict.baseline).toEqual({ sent: 100, consumed: 100, p99Ms: 200 });
    expect(verdict.recent).toEqual({ sent: 250, consumed: 104, p99Ms: 200 });
  });

  it('calls a consumer slowdown when deleted falls while sent holds', () => {
    const verdict = aws(series({}, { consumed: 60 }));
    expect(verdict.kind).toBe('consumer-slowdown');
    expect(verdict.line).toMatch(/^consumer slowdown: deleted fell 40% while sent held \(\+0%\)/);
  });

  // Each case: the recent periods (the baseline is 100 sent, 100 deleted, p99 200 ms unless given), the verdict.
  const cases: Array<{
    b?: Partial<TrendFlow>;
    r: Partial<TrendFlow>;
    now?: number;
    kind: string;
    text: string;
  }> = [
    { r: { p99Ms: 900 }, kind: 'consumer-slowdown', text: 'p99 +350% (200 ms → 900 ms)' },
    { b: { p99Ms: 4 }, r: { p99Ms: 40 }, kind: 'steady', text: 'no change beyond the thresholds' },
    { r: { sent: 200, consumed: 50 }, kind: 'spike-and-slowdown', text: 'deleted fell 50%' },
    { r: { sent: 40, consumed: 140 }, now: 500, kind: 'draining', text: 'about 5 period(s) to empty' },
    { r: { sent: 200, consumed: 195 }, kind: 'steady', text: 'sent +100%' },
    {
      b: { sent: 1, consumed: 1 },
      r: { sent: 4, consumed: 0 },
      now: 3,
      kind: 'steady',
      text: 'too little traffic',
    },
  ];
  it.each(cases)('calls $kind for recent $r over $b: "$text"', ({ b, r, now, kind, text }) => {
    // Act
    const verdict = aws(series(b ?? {}, r), now ?? 50);

    // Assess
    expect(verdict.kind).toBe(kind);
    expect(verdict.line).toContain(text);
  });

  it('locally (sent unknown): a slowdown only while messages wait, and says sent is not known', () => {
    const local = (backlogNow: number) =>
      trendVerdict({
        periods: series({ sent: null, visible: null }, { sent: null, visible: null, consumed: 30 }),
        backlogNow,
        consumedName: 'completed',
      });
    expect(local(200).kind).toBe('consumer-slowdown');
    expect(local(200).line).toContain('sent is not known here (no CloudWatch)');
    expect(local(0).kind).toBe('steady');
    expect(local(0).line).toContain('(a fall with the queue empty is less traffic)');
  });

  it('locally: nothing completed recently while messages are visible is a slowdown', () => {
    const verdict = trendVerdict({
      periods: series({ sent: null, consumed: 0 }, { sent: null, consumed: 0 }),
      backlogNow: 40,
      consumedName: 'completed',
    });
    expect(verdict.kind).toBe('consumer-slowdown');
    expect(verdict.line).toContain('nothing completed in the recent periods while 40 message(s) are visible');
  });
});

const count = fc.integer({ min: 0, max: 100_000 });
const flow = fc.record({
  sent: fc.option(count, { nil: null }),
  consumed: count,
  p99Ms: fc.option(count, { nil: null }),
  visible: fc.option(count, { nil: null }),
});

describe('Property: trendVerdict()', () => {
  it('always gives a line that starts with its kind', () => {
    fc.assert(
      fc.property(
        fc.array(flow, { minLength: 4, maxLength: 288 }),
        fc.option(count, { nil: null }),
        (periods, backlogNow) => {
          const verdict = trendVerdict({ periods, backlogNow, consumedName: 'deleted' });
          const label =
            verdict.kind === 'spike-and-slowdown'
              ? 'producer spike and consumer slowdown'
              : verdict.kind.replace('-', ' ');
          expect(verdict.line.startsWith(`${label}:`)).toBe(true);
        },
      ),
    );
  });

  it('calls constant traffic steady, whatever its level', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 4, max: 288 }),
        count,
        (level, n, p99) => {
          const periods = Array.from({ length: n }, () => ({
            sent: level,
            consumed: level,
            p99Ms: p99,
            visible: 10,
          }));
          expect(trendVerdict({ periods, backlogNow: 10, consumedName: 'deleted' }).kind).toBe('steady');
        },
      ),
    );
  });

  it('calls a recent rise of sent by sentRise over a held consumer a producer spike', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: TREND_THRESHOLDS.minMessagesPerPeriod, max: 10_000 }),
        fc.double({ min: TREND_THRESHOLDS.sentRise, max: 20, noNaN: true }),
        fc.integer({ min: 4, max: 288 }),
        (level, rise, n) => {
          const periods = series(
            { sent: level, consumed: level },
            { sent: Math.ceil(level * (1 + rise)) + 1, consumed: level },
            n,
          );
          expect(trendVerdict({ periods, backlogNow: 100, consumedName: 'deleted' }).kind).toBe(
            'producer-spike',
          );
        },
      ),
    );
  });

  it('calls a recent fall of deleted by consumedFall under a held producer a consumer slowdown', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 20, max: 10_000 }),
        fc.double({ min: TREND_THRESHOLDS.consumedFall, max: 1, noNaN: true }),
        fc.integer({ min: 4, max: 288 }),
        (level, fall, n) => {
          const periods = series(
            { sent: level, consumed: level, p99Ms: 100 },
            { sent: level, consumed: Math.floor(level * (1 - fall)), p99Ms: 100 },
            n,
          );
          expect(trendVerdict({ periods, backlogNow: 100, consumedName: 'deleted' }).kind).toBe(
            'consumer-slowdown',
          );
        },
      ),
    );
  });

  it('keeps its kind when every count is scaled (it compares ratios), above minMessagesPerPeriod', () => {
    fc.assert(
      fc.property(
        fc.array(
          flow.map((p) => ({ ...p, p99Ms: null })),
          { minLength: 4, maxLength: 40 },
        ),
        fc.integer({ min: 2, max: 10 }),
        fc.option(count, { nil: null }),
        (periods, k, backlogNow) => {
          const volume = Math.max(...periods.flatMap((p) => [p.sent ?? 0, p.consumed]));
          fc.pre(volume >= TREND_THRESHOLDS.minMessagesPerPeriod * 4);
          const scaled = periods.map((p) => ({
            ...p,
            sent: p.sent === null ? null : p.sent * k,
            consumed: p.consumed * k,
          }));
          const input = { backlogNow, consumedName: 'deleted' } as const;
          expect(trendVerdict({ periods: scaled, ...input }).kind).toBe(
            trendVerdict({ periods, ...input }).kind,
          );
        },
      ),
    );
  });
});
