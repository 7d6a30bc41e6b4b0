import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lambda/errors.ts';
import type { EventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { startLocalConcurrencyLoop } from '../../tools/local/local-concurrency-loop.ts';

const options = (floor: number | undefined, minuteMs?: number) => ({
  // Only its maxConcurrency is read before the settings are checked.
  esm: { maxConcurrency: 4 } as EventSourceMapping,
  probe: async () => {},
  ...(floor === undefined ? {} : { floor }),
  ...(minuteMs === undefined ? {} : { minuteMs }),
  source: { namespace: 'SqsInboxWorker', service: 'case-worker' },
  logger: { info() {}, warn() {}, error() {} } as never,
  metrics: { addMetric() {}, publishStoredMetrics() {} },
});

describe('The local control loop’s settings', () => {
  it('refuses a floor outside 2 to the mapping’s maxConcurrency, and a minute too short, naming the value', () => {
    expect(() => startLocalConcurrencyLoop(options(5))).toThrow(ConfigError);
    expect(() => startLocalConcurrencyLoop(options(5))).toThrow(
      "the local concurrency loop's floor must be a whole number from 2 to the mapping's maxConcurrency 4 (given 5)",
    );
    expect(() => startLocalConcurrencyLoop(options(1))).toThrow(/from 2 to .* \(given 1\)/);
    expect(() => startLocalConcurrencyLoop(options(2.5))).toThrow(/\(given 2\.5\)/);
    expect(() => startLocalConcurrencyLoop(options(2, 100))).toThrow(
      "minuteMs must be at least 600 (given 100): the loop's clock would outrun its ticks",
    );
  });
});
