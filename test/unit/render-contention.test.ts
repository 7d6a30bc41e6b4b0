import { describe, expect, it } from 'vitest';
import { CONTENTION_DEFAULTS, type ContentionPass } from '../../tools/bench/contention.ts';
import { receivesHistogram } from '../../tools/bench/contention-rig.ts';
import { renderContention } from '../../tools/bench/render-contention.ts';

/** A pass of 1,200 messages, every figure overridable. */
function pass(overrides: Partial<ContentionPass>): ContentionPass {
  return {
    runtime: 'poller',
    scenario: 'quiet',
    mode: 'fixed',
    messages: 1200,
    slowForMs: 0,
    holdMs: 0,
    seconds: 10,
    completed: 1200,
    messagesPerSecond: 120,
    retryablePerMessage: 0,
    extraReceives: 0,
    p99RecordMs: 300,
    dlq: 0,
    lowestLimit: 16,
    ...overrides,
  };
}

describe('Function: renderContention()', () => {
  it('prints a block per runtime, each scenario with its fixed and adaptive lines and the ratio line against the targets', () => {
    // Prepare
    const slow = { scenario: 'slow', slowForMs: 40_000, holdMs: 1500 } as const;
    const stalled = { scenario: 'slow', messages: 200, slowForMs: 45_000, holdMs: 45_000 } as const;
    const passes = [
      pass({}),
      pass({ mode: 'adaptive', messagesPerSecond: 114 }),
      pass({ runtime: 'lambda', lowestLimit: 8 }),
      pass({ runtime: 'lambda', mode: 'adaptive', lowestLimit: 8 }),
      pass({ runtime: 'lambda', ...slow, retryablePerMessage: 0.6, extraReceives: 700, lowestLimit: 8 }),
      pass({ runtime: 'lambda', ...slow, mode: 'adaptive', retryablePerMessage: 0.24, extraReceives: 280 }),
      pass({
        runtime: 'lambda',
        ...stalled,
        completed: 31,
        messagesPerSecond: 0.6,
        retryablePerMessage: 4.84,
        extraReceives: 800,
        dlq: 169,
        lowestLimit: 8,
      }),
      pass({
        runtime: 'lambda',
        ...stalled,
        mode: 'adaptive',
        completed: 200,
        messagesPerSecond: 4.2,
        retryablePerMessage: 1.92,
        extraReceives: 384,
        lowestLimit: 2,
      }),
    ];

    // Act
    const lines = renderContention({ settings: CONTENTION_DEFAULTS, passes }).split('\n');

    // Assess: the headings, in order, with each runtime's setting and what its limit counts
    expect(lines.filter((line) => !line.startsWith('  '))).toEqual([
      'Contention (poller): 1200 messages on 4 hot rows, lock_timeout 500 ms, concurrency 16 (the limit: records in flight)',
      ' the hot rows alone:',
      "Contention (Lambda): 1200 messages on 4 hot rows, lock_timeout 500 ms, MaximumConcurrency 8 × 2 records at a time, batch 4 (the limit: invocations, floor 2; the loop's clock 30× the deployed one)",
      ' the hot rows alone:',
      ' and a slow database (the rows held 1500 ms at a time for the first 40 s):',
      ' and the rows locked for the first 45 s in one hold, 200 messages:',
    ]);
    expect(lines.filter((line) => line.startsWith('  adaptive vs fixed'))).toEqual([
      '  adaptive vs fixed: throughput 95 % (target: no measurable cost), p99 record 300 ms vs 300 ms',
      '  adaptive vs fixed: throughput 100 % (target: no measurable cost), p99 record 300 ms vs 300 ms',
      '  adaptive vs fixed: retryable 40 %, extra receives 40 % (target ≤ 50 %), throughput 100 % (target ≥ 90 %), DLQ 0 (target 0)',
      '  adaptive vs fixed: retryable 40 %, extra receives 48 % (target ≤ 50 %), throughput 700 % (target ≥ 90 %), DLQ 0 (target 0)',
    ]);
    expect(lines).toContain(
      '  fixed         0.6 msg/s  retryable 4.84/msg  extra receives   800  p99 record    300 ms  DLQ 169  lowest limit 8  (31 completed in 10.0 s)',
    );
  });

  it('leaves out a runtime without passes and the ratio line of a scenario without both modes', () => {
    // Act
    const text = renderContention({ settings: CONTENTION_DEFAULTS, passes: [pass({ runtime: 'lambda' })] });

    // Assess
    expect(text).not.toContain('Contention (poller)');
    expect(text).toContain('Contention (Lambda)');
    expect(text).not.toContain('adaptive vs fixed');
  });
});

describe('Function: receivesHistogram()', () => {
  it('counts the messages of each receive count, fewest receives first', () => {
    expect(receivesHistogram([2, 1, 1, 3, 2, 1])).toBe('1×3 2×2 3×1');
    expect(receivesHistogram([])).toBe('');
  });
});
