import { describe, expect, it } from 'vitest';
import {
  type BreakerSettings,
  type BreakerState,
  initialBreakerState,
  isProbeDue,
  type MappingView,
  probeBackoffMs,
  stepBreaker,
} from '../../lambda/breaker/breaker-state.ts';

const settings: BreakerSettings = {
  failureThreshold: 2,
  minOpenMs: 60_000,
  probeBackoffBaseMs: 15_000,
  probeBackoffMaxMs: 120_000,
  halfOpenMs: 30_000,
};
const enabled: MappingView = { enabled: true, held: false };
const disabled: MappingView = { enabled: false, held: false };
const T0 = Date.parse('2026-12-01T12:00:00Z');
const closedAt = (since: number, failures = 0): BreakerState => ({
  status: 'closed',
  since,
  failures,
  nextProbeAt: since,
  held: false,
});

describe('Function: stepBreaker()', () => {
  it('stays closed after one failed probe and opens after failureThreshold in a row, disabling the mapping', () => {
    // Prepare
    const start = closedAt(T0);

    // Act
    const first = stepBreaker(start, { mapping: enabled, probe: 'failed' }, T0 + 1000, settings);
    const second = stepBreaker(first.state, { mapping: enabled, probe: 'failed' }, T0 + 2000, settings);

    // Assess
    expect(first).toEqual({ state: { ...start, failures: 1 } });
    expect(second.action).toBe('disable');
    expect(second.transition).toEqual({
      from: 'closed',
      to: 'open',
      reason: 'database unavailable: 2 failed probe(s) in a row',
    });
    expect(second.state).toEqual({
      status: 'open',
      since: T0 + 2000,
      failures: 0,
      nextProbeAt: T0 + 2000 + 60_000,
      held: false,
    });
  });

  it('resets the count of failures on a good probe while closed', () => {
    const step = stepBreaker(closedAt(T0, 1), { mapping: enabled, probe: 'ok' }, T0 + 1000, settings);

    expect(step).toEqual({ state: closedAt(T0, 0) });
  });

  it('does not probe before the minimum open time, then backs off with each failed probe up to the maximum', () => {
    // Prepare
    const opened = stepBreaker(closedAt(T0, 1), { mapping: enabled, probe: 'failed' }, T0, settings).state;
    const mapping = disabled; // the action was applied

    // Act: probe when due, fail each time
    const dueTimes: number[] = [];
    let state = opened;
    for (let i = 0; i < 5; i += 1) {
      expect(isProbeDue(state, mapping, state.nextProbeAt - 1)).toBe(false);
      dueTimes.push(state.nextProbeAt - T0);
      state = stepBreaker(state, { mapping, probe: 'failed' }, state.nextProbeAt, settings).state;
    }

    // Assess: 60 s minimum, then +15 s, +30 s, +60 s, +120 s (capped)
    expect(dueTimes).toEqual([60_000, 75_000, 105_000, 165_000, 285_000]);
    expect(state.nextProbeAt - T0).toBe(405_000);
    expect(state.status).toBe('open');
    expect(probeBackoffMs(10, settings)).toBe(120_000);
  });

  it('goes half-open on a good probe, enabling the mapping at low concurrency, then restores after halfOpenMs', () => {
    // Prepare
    const open: BreakerState = {
      status: 'open',
      since: T0,
      failures: 3,
      nextProbeAt: T0 + 60_000,
      held: false,
    };

    // Act
    const half = stepBreaker(open, { mapping: disabled, probe: 'ok' }, T0 + 60_000, settings);
    const early = stepBreaker(half.state, { mapping: enabled, probe: 'ok' }, T0 + 70_000, settings);
    const restored = stepBreaker(early.state, { mapping: enabled, probe: 'ok' }, T0 + 90_000, settings);

    // Assess
    expect(half.action).toBe('half-open');
    expect(half.transition).toEqual({ from: 'open', to: 'half-open', reason: 'database probe succeeded' });
    expect(early.action).toBeUndefined();
    expect(early.state.status).toBe('half-open');
    expect(restored.action).toBe('restore');
    expect(restored.transition?.to).toBe('closed');
    expect(restored.state).toEqual(closedAt(T0 + 90_000));
  });

  it('opens again at once when a probe fails while half-open, keeping the backoff it had', () => {
    const half: BreakerState = { status: 'half-open', since: T0, failures: 3, nextProbeAt: T0, held: false };

    const step = stepBreaker(half, { mapping: enabled, probe: 'failed' }, T0 + 5000, settings);

    expect(step.action).toBe('disable');
    expect(step.transition).toEqual({
      from: 'half-open',
      to: 'open',
      reason: 'database probe failed while half-open',
    });
    // 4 failures: 15 s × 2³ = 120 s, above the 60 s minimum
    expect(step.state.nextProbeAt).toBe(T0 + 5000 + 120_000);
  });

  it('holds open for an operator without probing, and closes when the hold is released', () => {
    // Prepare
    const held: MappingView = { enabled: true, held: true };

    // Act
    const opened = stepBreaker(closedAt(T0), { mapping: held }, T0, settings);
    const stillHeld = stepBreaker(
      opened.state,
      { mapping: { enabled: false, held: true } },
      T0 + 600_000,
      settings,
    );
    const released = stepBreaker(stillHeld.state, { mapping: enabled, probe: 'ok' }, T0 + 700_000, settings);

    // Assess
    expect(opened.action).toBe('disable');
    expect(opened.transition).toEqual({ from: 'closed', to: 'open', reason: 'held open by an operator' });
    expect(opened.state.held).toBe(true);
    expect(isProbeDue(opened.state, { enabled: false, held: true }, T0 + 10 * 3_600_000)).toBe(false);
    expect(stillHeld).toEqual({ state: opened.state });
    expect(released.transition).toEqual({
      from: 'open',
      to: 'closed',
      reason: 'hold released by an operator',
    });
    expect(released.action).toBe('restore');
  });

  it('never closes a held breaker on a good probe', () => {
    const held: BreakerState = { status: 'open', since: T0, failures: 0, nextProbeAt: T0, held: true };

    const step = stepBreaker(
      held,
      { mapping: { enabled: false, held: true }, probe: 'ok' },
      T0 + 1,
      settings,
    );

    expect(step.state).toEqual(held);
    expect(step.action).toBeUndefined();
  });

  it('follows a mapping changed outside the breaker', () => {
    const fromClosed = stepBreaker(closedAt(T0), { mapping: disabled }, T0 + 1, settings);
    const fromOpen = stepBreaker(
      { status: 'open', since: T0, failures: 2, nextProbeAt: T0 + 60_000, held: false },
      { mapping: enabled },
      T0 + 1,
      settings,
    );

    expect(fromClosed.state.status).toBe('open');
    expect(fromClosed.action).toBeUndefined();
    expect(fromOpen.state).toEqual(closedAt(T0 + 1));
    expect(fromOpen.action).toBeUndefined();
  });
});

describe('Function: initialBreakerState()', () => {
  it('starts closed on an enabled mapping and open since LastModified on a disabled one (a cold start)', () => {
    expect(initialBreakerState(enabled, T0 - 5000, T0, 60_000)).toEqual(closedAt(T0));
    expect(initialBreakerState(disabled, T0 - 5000, T0, 60_000)).toEqual({
      status: 'open',
      since: T0 - 5000,
      failures: 0,
      nextProbeAt: T0 + 55_000,
      held: false,
    });
    expect(initialBreakerState(disabled, T0 - 600_000, T0, 60_000).nextProbeAt).toBe(T0);
  });
});
