import { describe, expect, it } from 'vitest';
import { DeadlineGuard } from '../../lambda/worker/deadline-guard.ts';

/** A record that settled well within the time it had. */
const settled = (durationMs: number) => ({ durationMs, startedLeftMs: 29_500 });

describe('Class: DeadlineGuard', () => {
  it('is at least 2 s and follows the p99 of the records that settled in time', () => {
    // Prepare
    const guard = new DeadlineGuard();
    guard.noteBudget(29_500);
    const before = guard.guardMs();

    // Act
    for (let i = 0; i < 100; i++) guard.observe(settled(i < 98 ? 100 : 5000));

    // Assess
    expect(before).toBe(2000);
    expect(guard.guardMs()).toBe(5000);
  });

  it('leaves out a record cut by a deadline, and one that used all the time it had', () => {
    // Prepare
    const guard = new DeadlineGuard();
    guard.noteBudget(29_500);

    // Act
    for (const code of ['HANDLER_TIMEOUT', 'DATABASE_TIMEOUT', 'PAYLOAD_READ_TIMEOUT', 'RECORD_UNSETTLED']) {
      guard.observe({ durationMs: 29_400, startedLeftMs: 29_500, failureCode: code });
    }
    guard.observe({ durationMs: 29_600, startedLeftMs: 29_500, failureCode: 'CASE_NOT_FOUND' });
    guard.observe({ durationMs: 3000, startedLeftMs: 3000 });

    // Assess: nothing was a sample.
    expect(guard.guardMs()).toBe(2000);
  });

  it('never exceeds half the full budget, so the first record of the next invocation always starts', () => {
    // Prepare: a 4 s function (3.5 s left for a handler at the start of a batch).
    const guard = new DeadlineGuard();
    guard.noteBudget(3500);

    // Act: a record that settled after 3.4 s; then a batch of a function too short for the 2 s floor.
    guard.observe({ durationMs: 3400, startedLeftMs: 3500 });
    const capped = guard.guardMs();
    const short = new DeadlineGuard();
    short.noteBudget(1000);

    // Assess
    expect(capped).toBe(1750);
    expect(capped).toBeLessThanOrEqual(3500);
    expect(short.guardMs()).toBe(500);
  });

  it('takes the largest budget a batch started with as the full budget', () => {
    // Prepare
    const guard = new DeadlineGuard();
    guard.observe(settled(20_000));

    // Act: a fresh invocation's budget, then a batch of a poller that is stopping.
    guard.noteBudget(29_500);
    guard.noteBudget(1000);

    // Assess
    expect(guard.guardMs()).toBe(14_750);
  });

  it('lets samples age out after 5 minutes', () => {
    // Prepare
    let now = 1_000_000;
    const guard = new DeadlineGuard(undefined, { now: () => now });
    guard.noteBudget(29_500);
    guard.observe(settled(10_000));
    const fresh = guard.guardMs();

    // Act
    now += 5 * 60_000 + 1;

    // Assess
    expect(fresh).toBe(10_000);
    expect(guard.guardMs()).toBe(2000);
  });

  it('counts the last 200 samples only', () => {
    // Prepare
    const guard = new DeadlineGuard();
    guard.noteBudget(29_500);
    guard.observe(settled(10_000));
    const slow = guard.guardMs();

    // Act
    for (let i = 0; i < 200; i++) guard.observe(settled(100));

    // Assess
    expect(slow).toBe(10_000);
    expect(guard.guardMs()).toBe(2000);
  });

  it('uses a fixed guard when configured, as given', () => {
    const guard = new DeadlineGuard(60_000);
    guard.noteBudget(1000);
    guard.observe(settled(10_000));
    expect(guard.guardMs()).toBe(60_000);
  });
});
