import Table from 'cli-table3';
import type { ConfigResult } from './bench-config.ts';
import type { WorkerBundle } from './bundle-worker.ts';
import type { ColdLoad } from './cold-load.ts';
import { formatKiB, formatMs, formatRatio, verdict } from './statistics.ts';

/** The bench's targets (docs/performance.md). */
export const TARGETS = {
  /** per-message msgs/s ≥ this × the raw baseline's at the same concurrency. */
  perMessageVsBaseline: 0.9,
  /** per-batch msgs/s ≥ this × per-message at concurrency 1. */
  perBatchVsPerMessage: 2.5,
  /** The bundle's size ≤ this many bytes. */
  bundleBytes: 600 * 1024,
  /** The bundle's cold load ≤ this × a bare `node` start. */
  coldLoadVsBareNode: 2,
};

const LATENCY_BASIS: Record<ConfigResult['mode'], string> = {
  baseline: 'txn per msg',
  'per-message': 'record time',
  'per-batch': 'batch ÷ records',
};

/** Everything one bench run measured. */
export interface BenchReport {
  readonly results: readonly ConfigResult[];
  /** Concurrency-1 results with a modelled commit latency (empty when skipped). */
  readonly slowCommit?: readonly ConfigResult[];
  readonly commitLatencyMs?: number;
  readonly bundle: WorkerBundle;
  readonly coldLoad: ColdLoad;
}

const plain = { style: { head: [], border: [] } };

/** The throughput table: one row per mode and concurrency, worker rows with ratios to the baseline. */
export function renderThroughput(results: readonly ConfigResult[]): string {
  const table = new Table({
    ...plain,
    head: [
      'mode',
      'conc.',
      'msgs/s',
      '× base',
      'p50',
      'p99',
      'latency =',
      'RT/msg',
      'stmts/msg',
      'RT × base',
    ],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'left', 'right', 'right', 'right'],
  });
  for (const row of results) {
    const base = results.find((r) => r.mode === 'baseline' && r.concurrency === row.concurrency);
    const isBase = row.mode === 'baseline';
    table.push([
      row.mode,
      row.concurrency,
      row.messagesPerSecond.toFixed(0),
      isBase || !base
        ? ''
        : row.vsBaseline !== undefined
          ? formatRatio(row.vsBaseline, 1)
          : formatRatio(row.messagesPerSecond, base.messagesPerSecond),
      formatMs(row.p50Ms),
      formatMs(row.p99Ms),
      LATENCY_BASIS[row.mode],
      row.roundTripsPerMessage.toFixed(2),
      row.statementsPerMessage.toFixed(2),
      isBase || !base ? '' : formatRatio(row.roundTripsPerMessage, base.roundTripsPerMessage),
    ]);
  }
  return table.toString();
}

/** The targets with the measured figure beside each and met/MISSED. */
export function renderTargets(report: BenchReport): string {
  const table = new Table({ ...plain, head: ['target', 'measured', ''] });
  const find = (mode: ConfigResult['mode'], concurrency: number) =>
    report.results.find((r) => r.mode === mode && r.concurrency === concurrency);
  for (const concurrency of [...new Set(report.results.map((r) => r.concurrency))]) {
    const base = find('baseline', concurrency);
    const worker = find('per-message', concurrency);
    if (!base || !worker) continue;
    const ratio = worker.vsBaseline ?? worker.messagesPerSecond / base.messagesPerSecond;
    table.push([
      `per-message ≥ ${TARGETS.perMessageVsBaseline * 100} % of baseline msgs/s, concurrency ${concurrency}`,
      `${(ratio * 100).toFixed(1)} %`,
      verdict(ratio >= TARGETS.perMessageVsBaseline),
    ]);
  }
  const perMessage = find('per-message', 1);
  const perBatch = find('per-batch', 1);
  if (perMessage && perBatch) {
    const ratio = perBatch.vsPerMessage ?? perBatch.messagesPerSecond / perMessage.messagesPerSecond;
    table.push([
      `per-batch ≥ ${TARGETS.perBatchVsPerMessage} × per-message msgs/s, concurrency 1`,
      `${ratio.toFixed(2)} ×`,
      verdict(ratio >= TARGETS.perBatchVsPerMessage),
    ]);
  }
  const slowMessage = report.slowCommit?.find((r) => r.mode === 'per-message');
  const slowBatch = report.slowCommit?.find((r) => r.mode === 'per-batch');
  if (slowMessage && slowBatch) {
    const ratio = slowBatch.messagesPerSecond / slowMessage.messagesPerSecond;
    table.push([
      `per-batch ≥ ${TARGETS.perBatchVsPerMessage} × per-message, concurrency 1, ${report.commitLatencyMs} ms commits (model)`,
      `${ratio.toFixed(2)} ×`,
      verdict(ratio >= TARGETS.perBatchVsPerMessage),
    ]);
  }
  table.push([
    `bundle ≤ ${formatKiB(TARGETS.bundleBytes)} (everything deployed)`,
    formatKiB(report.bundle.bytes),
    verdict(report.bundle.bytes <= TARGETS.bundleBytes),
  ]);
  const cold = report.coldLoad.bundleMs / report.coldLoad.bareNodeMs;
  table.push([
    `cold load ≤ ${TARGETS.coldLoadVsBareNode} × bare node start`,
    `${formatMs(report.coldLoad.bundleMs)} vs ${formatMs(report.coldLoad.bareNodeMs)} = ${cold.toFixed(2)} ×`,
    verdict(cold <= TARGETS.coldLoadVsBareNode),
  ]);
  return table.toString();
}

/** The bundle's size, its largest packages, the cold-load medians and what the lazy parts add on first use. */
export function renderBundle(bundle: WorkerBundle, coldLoad: ColdLoad): string {
  const top = bundle.byPackage
    .slice(0, 6)
    .map((entry) => `${entry.name} ${formatKiB(entry.bytes)}`)
    .join(', ');
  const firstUse: Record<string, string> = {
    '@aws-sdk/client-sqs': 'first backoff',
    '@aws-sdk/rds-signer': 'first IAM-authenticated connection',
    '@aws-lambda-powertools/tracer': 'at init, with tracing on only',
  };
  const tracer = bundle.lazyChunks.find((chunk) => chunk.loads === '@aws-lambda-powertools/tracer');
  return [
    `worker bundle: ${formatKiB(bundle.bytes)} deployed (index.mjs and chunks/` +
      `${tracer ? `; ${formatKiB(bundle.bytes - tracer.bytes)} without the tracer chunk` : ''}), of which a cold start loads ` +
      `${formatKiB(bundle.coldBytes)}; source maps ${formatKiB(bundle.mapBytes)}, separate files`,
    `  largest parts: ${top}`,
    `cold load, median of ${coldLoad.runs} fresh processes: bare \`node -e 0\` ${formatMs(coldLoad.bareNodeMs)}, ` +
      `import of the bundle ${formatMs(coldLoad.bundleMs)} ` +
      `(${formatMs(coldLoad.bundleWithSourceMapsMs)} with --enable-source-maps, as the stack sets; ` +
      `${formatMs(coldLoad.bundleWithTracingMs)} with tracing on, POWERTOOLS_TRACE_ENABLED=true)`,
    ...coldLoad.lazy.map(
      (part) =>
        `  loaded on first use: ${part.loads} ${formatKiB(part.bytes)}, +${formatMs(part.extraMs)} ` +
        `(${firstUse[part.loads] ?? 'on demand'})`,
    ),
  ].join('\n');
}
