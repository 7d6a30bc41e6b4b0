import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { PollerStopResult } from '../../lambda/runtimes/poller/start-poller.ts';
import { stopOnSignals } from '../../lambda/runtimes/poller/stop-on-signals.ts';

/** A poller whose stop resolves when the test says, and the calls made to the process. */
function harness() {
  const signals = new EventEmitter();
  const calls: string[] = [];
  let finish!: (drained: boolean) => void;
  const poller = {
    stop: ({ timeoutMs }: { timeoutMs: number }) => {
      calls.push(`stop ${timeoutMs}`);
      return new Promise<PollerStopResult>((resolve) => {
        finish = (drained) => resolve({ drained, stats: {} as PollerStopResult['stats'] });
      });
    },
  };
  const exited = new Promise<number>((resolve) => {
    stopOnSignals({
      poller,
      stopTimeoutMs: 30_000,
      close: async (mode) => {
        calls.push(`close ${mode}`);
      },
      exit: (code) => {
        calls.push(`exit ${code}`);
        resolve(code);
      },
      logger: { info() {}, warn() {}, error() {} } as never,
      signals: signals as never,
    });
  });
  return { signals, calls, exited, finish: (drained: boolean) => finish(drained) };
}

describe('Function: stopOnSignals()', () => {
  it('stops on SIGTERM, closes the connections gracefully once drained and exits 0', async () => {
    // Prepare
    const h = harness();

    // Act
    h.signals.emit('SIGTERM', 'SIGTERM');
    h.finish(true);

    // Assess
    expect(await h.exited).toBe(0);
    expect(h.calls).toEqual(['stop 30000', 'close graceful', 'exit 0']);
  });

  it('exits 1 after closing every connection at once when the stop times out', async () => {
    // Prepare
    const h = harness();

    // Act
    h.signals.emit('SIGINT', 'SIGINT');
    h.finish(false);

    // Assess
    expect(await h.exited).toBe(1);
    expect(h.calls).toEqual(['stop 30000', 'close now', 'exit 1']);
  });

  it('exits 1 at a second signal without waiting for the records in flight', async () => {
    // Prepare
    const h = harness();

    // Act
    h.signals.emit('SIGTERM', 'SIGTERM');
    h.signals.emit('SIGTERM', 'SIGTERM');

    // Assess: the stop never finished, and a late drain changes nothing.
    expect(await h.exited).toBe(1);
    h.finish(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.calls).toEqual(['stop 30000', 'close now', 'exit 1']);
  });
});
