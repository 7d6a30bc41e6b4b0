import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { type ConfigResult, pairedRatio } from '../../tools/bench/bench-config.ts';
import { packageOf } from '../../tools/bench/bundle-worker.ts';
import { BurstCounter } from '../../tools/bench/burst-counter.ts';
import { delayedPipe } from '../../tools/bench/delayed-pipe.ts';
import { StatementCounter } from '../../tools/bench/statement-counter.ts';
import { formatMs, formatRatio, median, percentile } from '../../tools/bench/statistics.ts';

describe('Function: percentile()', () => {
  it('returns the nearest-rank percentile of unsorted values', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];

    expect([
      percentile(values, 50),
      percentile(values, 90),
      percentile(values, 99),
      percentile(values, 0),
    ]).toEqual([5, 9, 10, 1]);
  });

  it('is NaN for no values and refuses a percentile outside 0–100', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow('percentile must be from 0 to 100 (given 101)');
  });
});

describe('Function: median()', () => {
  it('averages the two middle values of an even count', () => {
    expect([median([3, 1, 2]), median([4, 1, 3, 2]), median([])]).toEqual([2, 2.5, Number.NaN]);
  });
});

describe('Function: formatRatio() and formatMs()', () => {
  it('formats ratios to the baseline, and a dash when there is no usable baseline', () => {
    expect([formatRatio(450, 500), formatRatio(1, 0), formatRatio(Number.NaN, 1)]).toEqual([
      '0.90×',
      '–',
      '–',
    ]);
  });

  it('gives milliseconds a precision that suits their size', () => {
    expect([formatMs(0.4123), formatMs(4.123), formatMs(41.23), formatMs(412.3)]).toEqual([
      '0.412 ms',
      '4.12 ms',
      '41.2 ms',
      '412 ms',
    ]);
  });
});

describe('Class: BurstCounter', () => {
  it('counts one round trip per client burst that follows a server response', () => {
    // Prepare
    const counter = new BurstCounter();

    // Act: startup; a pipelined write in two chunks answered in two chunks; one more query
    counter.client();
    counter.server();
    counter.client();
    counter.client();
    counter.server();
    counter.server();
    counter.client();

    // Assess
    expect(counter.bursts).toBe(3);
  });
});

describe('Function: packageOf()', () => {
  it('names the innermost npm package of a bundled input, scoped or not', () => {
    expect([
      packageOf('node_modules/zod/v4/core/schemas.js'),
      packageOf('node_modules/@aws-sdk/client-sqs/dist-es/index.js'),
      packageOf('node_modules/@smithy/core/node_modules/@smithy/util/dist/a.js'),
      packageOf('lambda/stores/postgres/inbox.ts'),
    ]).toEqual(['zod', '@aws-sdk/client-sqs', '@smithy/util', '(project)']);
  });
});

/** One frontend protocol message: a type byte (omitted for startup messages), a length, a body. */
function message(type: string | undefined, body: number[]): number[] {
  const length = body.length + 4;
  const header = [(length >>> 24) & 255, (length >>> 16) & 255, (length >>> 8) & 255, length & 255];
  return [...(type ? [type.charCodeAt(0)] : []), ...header, ...body];
}

describe('Class: StatementCounter', () => {
  // SSLRequest, then a startup message, a password, one extended-protocol statement (Parse, Describe, Flush,
  // Bind, Execute, Sync) and one simple-protocol Query: 2 statements.
  const text = (value: string) => [...Buffer.from(`${value}\0`)];
  const stream = [
    ...message(undefined, [0x04, 0xd2, 0x16, 0x2f]),
    ...message(undefined, [0, 3, 0, 0, ...text('user'), ...text('bench'), 0]),
    ...message('p', text('secret')),
    ...message('P', [...text(''), ...text('select $1::int'), 0, 0]),
    ...message('D', [0x53, 0]),
    ...message('H', []),
    ...message('B', [0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0x31, 0, 0]),
    ...message('E', [0, 0, 0, 0, 0]),
    ...message('S', []),
    ...message('Q', text('commit')),
  ];

  it('counts Parse and Query messages, not the other messages of a statement or the startup', () => {
    const counter = new StatementCounter();

    counter.feed(Uint8Array.from(stream));

    expect(counter.statements).toBe(2);
  });

  it('counts the same however the stream is split into chunks', () => {
    const counts = new Set<number>();
    for (let size = 1; size <= 13; size += 1) {
      const counter = new StatementCounter();
      for (let at = 0; at < stream.length; at += size)
        counter.feed(Uint8Array.from(stream.slice(at, at + size)));
      counts.add(counter.statements);
    }

    expect([...counts]).toEqual([2]);
  });

  it('hands over each statement with its text, size and prepared-statement name, however the stream is split', () => {
    const named = [...message('P', [...text('s1'), ...text('select $1::int'), 0, 0])];
    for (const size of [1, 3, 7, 1000]) {
      const seen: Array<{ text: string; bytes: number; name: string }> = [];
      const counter = new StatementCounter((statement) => seen.push(statement));
      const bytes = [...stream, ...named];
      for (let at = 0; at < bytes.length; at += size)
        counter.feed(Uint8Array.from(bytes.slice(at, at + size)));

      expect(seen).toEqual([
        { text: 'select $1::int', bytes: 14, name: '' },
        { text: 'commit', bytes: 6, name: '' },
        { text: 'select $1::int', bytes: 14, name: 's1' },
      ]);
    }
  });
});

describe('Function: delayedPipe()', () => {
  it('writes every chunk after its delay, in the order the chunks came', async () => {
    const written: Array<{ chunk: string; at: number }> = [];
    const started = performance.now();
    const pipe = delayedPipe(5, (chunk) =>
      written.push({ chunk: chunk.toString(), at: performance.now() - started }),
    );

    pipe(Buffer.from('a'));
    pipe(Buffer.from('b'));
    await new Promise((resolve) => setTimeout(resolve, 2));
    pipe(Buffer.from('c'));
    expect(written).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 30));

    expect(written.map((w) => w.chunk)).toEqual(['a', 'b', 'c']);
    expect(written.every((w) => w.at >= 5)).toBe(true);
  });

  it('writes at once with no delay', () => {
    const written: string[] = [];
    delayedPipe(0, (chunk) => written.push(chunk.toString()))(Buffer.from('now'));
    expect(written).toEqual(['now']);
  });
});

describe('Function: pairedRatio()', () => {
  const runs = (...rates: number[]) =>
    rates.map((messagesPerSecond) => ({ messagesPerSecond }) as ConfigResult);

  it('is the median of the ratios within each round, not the ratio of the medians', () => {
    // Round 2 ran on a slow moment for both modes, round 3's baseline on a slow moment of its own: the ratio of
    // the medians would be 90 / 60 = 1.5.
    const worker = runs(90, 45, 120);
    const baseline = runs(100, 50, 60);

    expect(pairedRatio(worker, baseline)).toBeCloseTo(0.9);
  });

  it('refuses rounds that do not pair up', () => {
    expect(() => pairedRatio(runs(1, 2), runs(1))).toThrow(
      'pairedRatio needs as many rounds on each side (given 2 and 1)',
    );
    expect(() => pairedRatio([], [])).toThrow('(given 0 and 0)');
  });
});
