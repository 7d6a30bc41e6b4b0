import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AdaptiveLimit,
  decideLimit,
  type LimitChange,
  loadSignalOf,
  type SettledRecord,
  type WindowSignals,
} from '../../lambda/concurrency/index.ts';
import { FAILURE_CODES } from '../../lambda/failure-codes.ts';

const QUIET: WindowSignals = {
  ok: 40,
  contention: 0,
  throttle: 0,
  unavailable: 0,
  slow: 0,
  medianTransactionMs: 20,
};
const SETTINGS = { floor: 1, ceiling: 16 };

const completed = (ms = 20): SettledRecord => ({ result: 'COMPLETED', dbTransactionMs: ms });
const retryable = (failureCode: string): SettledRecord => ({
  result: 'RETRYABLE_FAILURE',
  failureCode,
  dbTransactionMs: 5,
});
const terminal = (failureCode: string): SettledRecord => ({
  result: 'TERMINAL_FAILURE',
  failureCode,
  dbTransactionMs: 5,
});

/** An AdaptiveLimit on a hand-moved clock, recording its changes. */
function limiter(settings: Partial<typeof SETTINGS> & { initial?: number } = {}) {
  let now = 0;
  const changes: LimitChange[] = [];
  const limit = new AdaptiveLimit(
    { ...SETTINGS, ...settings, windowMs: 1000 },
    { now: () => now, onChange: (change) => changes.push(change) },
  );
  /** One window: `records` settled with `inFlight` records in flight, the clock moved past the window. */
  const window = (records: SettledRecord[], inFlight = limit.limit) => {
    limit.noteInFlight(inFlight);
    for (const record of records.slice(0, -1)) limit.observe(record);
    now += 1000;
    return limit.observe(records.at(-1) ?? completed());
  };
  return { limit, changes, window };
}

describe('loadSignalOf: which outcomes speak of the database', () => {
  it.each([
    ['LOCK_TIMEOUT', 'contention'],
    ['DEADLOCK_DETECTED', 'contention'],
    ['SERIALIZATION_FAILURE', 'contention'],
    ['TRANSACTION_CONFLICT', 'contention'],
    ['THROTTLED', 'throttle'],
    ['TOO_MANY_CONNECTIONS', 'throttle'],
    ['CONNECT_TIMEOUT', 'unavailable'],
    ['DATABASE_UNAVAILABLE', 'unavailable'],
    ['DATABASE_TIMEOUT', 'slow'],
    ['CASE_LOCKED', 'ignored'],
    ['UNHANDLED_ERROR', 'ignored'],
    ['PAYLOAD_READ_TIMEOUT', 'ignored'],
  ])('a retryable %s is %s', (code, signal) => {
    expect(loadSignalOf(retryable(code))).toBe(signal);
  });

  it('never reads a terminal failure as load, whatever its code', () => {
    for (const code of FAILURE_CODES) expect(loadSignalOf(terminal(code)), code).toBe('ignored');
  });

  it('samples completed, duplicate and stale records; ignores records not yet due or deferred', () => {
    expect(
      ['COMPLETED', 'DUPLICATE', 'STALE_VERSION_SKIPPED'].map((result) =>
        loadSignalOf({ result } as SettledRecord),
      ),
    ).toEqual(['ok', 'ok', 'ok']);
    expect(
      ['NOT_YET_DUE', 'DEADLINE_DEFERRED'].map((result) => loadSignalOf({ result } as SettledRecord)),
    ).toEqual(['ignored', 'ignored']);
  });
});

describe('decideLimit: one window', () => {
  it('cuts the limit by a quarter when 5 % of the database-bound records are lock timeouts, and names the counts', () => {
    // Act
    const decision = decideLimit(
      { limit: 16, baselineMs: 20 },
      { ...QUIET, ok: 38, contention: 2 },
      SETTINGS,
    );

    // Assess
    expect(decision).toMatchObject({ limit: 12, change: 'decrease' });
    expect(decision.reason).toBe(
      '2 of 40 database-bound records were signals of load (contention 2, throttle 0, unavailable 0, slow 0)',
    );
  });

  it('cuts on a median transaction time twice the baseline, without any failure', () => {
    // Act
    const decision = decideLimit(
      { limit: 8, baselineMs: 20 },
      { ...QUIET, medianTransactionMs: 45 },
      SETTINGS,
    );

    // Assess
    expect(decision).toMatchObject({ limit: 6, change: 'decrease' });
    expect(decision.reason).toBe('median transaction 45 ms, 2.3× the baseline 20 ms');
  });

  it('does not read a few milliseconds’ swing of a fast workload as a slow database', () => {
    // Act: 3 → 9 ms is 3× the baseline but 6 ms above it; 3 → 23 ms is 20 ms above it
    const swing = decideLimit({ limit: 8, baselineMs: 3 }, { ...QUIET, medianTransactionMs: 9 }, SETTINGS);
    const slow = decideLimit({ limit: 8, baselineMs: 3 }, { ...QUIET, medianTransactionMs: 23 }, SETTINGS);
    const tight = decideLimit(
      { limit: 8, baselineMs: 3 },
      { ...QUIET, medianTransactionMs: 9 },
      { ...SETTINGS, latencyMarginMs: 0 },
    );

    // Assess
    expect(swing.change).not.toBe('decrease');
    expect(slow).toMatchObject({ limit: 6, change: 'decrease' });
    expect(tight).toMatchObject({ limit: 6, change: 'decrease' });
  });

  it('lowers a small limit by at least 1, and never below the floor', () => {
    // Act
    const from2 = decideLimit({ limit: 2 }, { ...QUIET, throttle: 10 }, SETTINGS);
    const atFloor = decideLimit({ limit: 2 }, { ...QUIET, throttle: 10 }, { floor: 2, ceiling: 10 });

    // Assess
    expect(from2.limit).toBe(1);
    expect(atFloor).toMatchObject({ limit: 2, change: 'hold' });
    expect(atFloor.reason).toMatch(/; at the floor \(2\)$/);
  });

  it('raises by 1 after a quiet window that used the limit; holds when it did not, or at the ceiling', () => {
    expect(decideLimit({ limit: 4 }, { ...QUIET, peakInFlight: 4 }, SETTINGS)).toMatchObject({
      limit: 5,
      change: 'increase',
    });
    expect(decideLimit({ limit: 4 }, { ...QUIET, peakInFlight: 2 }, SETTINGS)).toMatchObject({
      limit: 4,
      change: 'hold',
    });
    expect(decideLimit({ limit: 16 }, QUIET, SETTINGS)).toMatchObject({
      limit: 16,
      reason: 'at the ceiling (16)',
    });
  });

  it('remembers where the first of a run of cuts left the limit, and doubles back up to it before adding 1', () => {
    // Act
    const first = decideLimit({ limit: 16 }, { ...QUIET, contention: 5 }, SETTINGS);
    const second = decideLimit(first, { ...QUIET, contention: 5 }, SETTINGS);
    const back = decideLimit({ ...second, limit: 3 }, { ...QUIET, peakInFlight: 3 }, SETTINGS);
    const again = decideLimit(back, { ...QUIET, peakInFlight: 6 }, SETTINGS);
    const above = decideLimit(decideLimit(again, QUIET, SETTINGS), QUIET, SETTINGS);

    // Assess
    expect([first.limit, first.recoverTo, second.limit, second.recoverTo]).toEqual([12, 12, 9, 12]);
    expect([back.limit, back.recoverTo, again.limit, again.recoverTo]).toEqual([6, 12, 12, undefined]);
    expect(above.limit).toBe(14);
  });

  it('holds a rise while the database’s own signals show lock waits, deadlocks or long transactions; never cuts on them', () => {
    // Prepare
    const busy = (database: { lockWaits: number; deadlocks: number; longTransactions: number }) =>
      decideLimit({ limit: 6, recoverTo: 12 }, { ...QUIET, database }, SETTINGS);

    // Act
    const waits = busy({ lockWaits: 2, deadlocks: 0, longTransactions: 0 });
    const deadlocks = busy({ lockWaits: 0, deadlocks: 1, longTransactions: 0 });
    const long = busy({ lockWaits: 0, deadlocks: 0, longTransactions: 1 });
    const calm = busy({ lockWaits: 0, deadlocks: 0, longTransactions: 0 });
    const contended = decideLimit(
      { limit: 6 },
      { ...QUIET, contention: 5, database: { lockWaits: 9, deadlocks: 9, longTransactions: 9 } },
      SETTINGS,
    );

    // Assess: held where quiet records would raise, with what the database showed; the memory kept
    for (const held of [waits, deadlocks, long]) {
      expect(held).toMatchObject({ limit: 6, change: 'hold', recoverTo: 12 });
    }
    expect(waits.reason).toBe(
      "no signal of load in the worker's records, but the database shows 2 lock waits, 0 deadlocks, 0 long transactions (the health job): not raised",
    );
    expect(calm).toMatchObject({ limit: 12, change: 'increase' });
    // The worker's own signals cut, as without the database's (the same cut, whatever those show)
    expect(contended).toMatchObject({ limit: 4, change: 'decrease' });
  });

  it('holds without any database-bound record: a window of business failures moves nothing', () => {
    // Act
    const decision = decideLimit(
      { limit: 4 },
      { ok: 0, contention: 0, throttle: 0, unavailable: 0, slow: 0 },
      SETTINGS,
    );

    // Assess
    expect(decision).toMatchObject({ limit: 4, change: 'hold', reason: 'no database-bound record' });
  });

  it('stays within floor and ceiling for any state and window (property)', () => {
    const count = fc.nat({ max: 500 });
    fc.assert(
      fc.property(
        fc.record({ floor: fc.integer({ min: 1, max: 20 }), span: fc.nat({ max: 100 }) }),
        fc.integer({ min: -5, max: 200 }),
        fc.option(fc.double({ min: 0.1, max: 5000, noNaN: true }), { nil: undefined }),
        fc.record({ ok: count, contention: count, throttle: count, unavailable: count, slow: count }),
        fc.option(fc.double({ min: 0.1, max: 5000, noNaN: true }), { nil: undefined }),
        ({ floor, span }, limit, baselineMs, counts, medianTransactionMs) => {
          const settings = { floor, ceiling: floor + span };
          const decision = decideLimit(
            { limit, ...(baselineMs === undefined ? {} : { baselineMs }) },
            { ...counts, ...(medianTransactionMs === undefined ? {} : { medianTransactionMs }) },
            settings,
          );
          expect(decision.limit).toBeGreaterThanOrEqual(floor);
          expect(decision.limit).toBeLessThanOrEqual(floor + span);
          expect(Number.isInteger(decision.limit)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('AdaptiveLimit: windows of settled records', () => {
  it('drops under lock contention, one cut per window however many records fail, then recovers to the ceiling', () => {
    // Prepare
    const { limit, changes, window } = limiter();
    const contended = [...Array.from({ length: 30 }, () => retryable('LOCK_TIMEOUT')), completed()];

    // Act: three contended windows, then quiet windows that use the limit
    for (let i = 0; i < 3; i += 1) window(contended);
    const lowest = limit.limit;
    let quiet = 0;
    while (limit.limit < 16 && quiet < 100) {
      window(Array.from({ length: 10 }, () => completed()));
      quiet += 1;
    }

    // Assess
    expect(lowest).toBe(6); // 16 → 12 → 9 → 6
    expect(changes.slice(0, 3).map(({ from, to }) => [from, to])).toEqual([
      [16, 12],
      [12, 9],
      [9, 6],
    ]);
    // Back up: doubled to 12 (where the first cut left it), then one at a time
    expect(limit.limit).toBe(16);
    expect(quiet).toBe(5);
    expect(changes.slice(3).map(({ from, to }) => [from, to])).toEqual([
      [6, 12],
      [12, 13],
      [13, 14],
      [14, 15],
      [15, 16],
    ]);
    expect(changes[3]?.reason).toBe(
      'no signal of load in 10 database-bound records; doubling back toward 12',
    );
    expect(changes.at(-1)).toEqual({
      from: 15,
      to: 16,
      reason: 'no signal of load in 10 database-bound records',
    });
  });

  it('ignores poison and business failures: a window of terminal and handler retryable failures keeps the limit', () => {
    // Prepare
    const { limit, changes, window } = limiter({ initial: 8 });
    const business = [
      ...Array.from({ length: 20 }, () => terminal('INVALID_PAYLOAD')),
      ...Array.from({ length: 20 }, () => retryable('CASE_LOCKED')),
      terminal('LOCK_TIMEOUT'),
    ];

    // Act
    const decision = window(business);

    // Assess
    expect(decision).toMatchObject({ change: 'hold', reason: 'no database-bound record' });
    expect(limit.limit).toBe(8);
    expect(changes).toEqual([]);
  });

  it('learns a baseline from quiet windows and cuts when the database slows down', () => {
    // Prepare
    const { limit, window } = limiter();
    for (let i = 0; i < 3; i += 1) window(Array.from({ length: 10 }, () => completed(20)));

    // Act
    const decision = window(Array.from({ length: 10 }, () => completed(90)));

    // Assess
    expect(limit.baselineMs).toBeGreaterThan(19);
    expect(decision).toMatchObject({ limit: 12, change: 'decrease' });
    expect(decision?.reason).toMatch(/^median transaction 90 ms, 4\.5× the baseline 20 ms$/);
  });

  it('decides nothing before its window is over', () => {
    // Prepare
    const limit = new AdaptiveLimit({ floor: 1, ceiling: 8, windowMs: 1000 }, { now: () => 0 });

    // Act
    const decisions = Array.from({ length: 50 }, () => limit.observe(retryable('DEADLOCK_DETECTED')));

    // Assess
    expect(decisions.every((decision) => decision === undefined)).toBe(true);
    expect(limit.limit).toBe(8);
  });

  it('refuses bounds that cannot hold, naming them', () => {
    expect(() => new AdaptiveLimit({ floor: 0, ceiling: 4 })).toThrow(
      'adaptive limit: floor 0 and ceiling 4 must satisfy 1 ≤ floor ≤ ceiling',
    );
    expect(() => new AdaptiveLimit({ floor: 5, ceiling: 4 })).toThrow(/floor 5 and ceiling 4/);
  });
});
