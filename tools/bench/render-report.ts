import Table from 'cli-table3';
import { describeWorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';
import type { BundleBench } from './bench-bundle.ts';
import type { ConfigResult } from './bench-config.ts';
import type { BenchMode } from './bench-lanes.ts';
import { pinningReasons } from './pinning-conditions.ts';
import { coldStartFloorTargetRows, renderColdStartFloors } from './render-cold-start-floor.ts';
import type { SeenStatement } from './statement-counter.ts';
import { formatKiB, formatMs, formatRatio, verdict } from './statistics.ts';

/** The bench's targets (docs/performance.md). */
export const TARGETS = {
  /** Under the RDS-like network at concurrency 1: per-message msgs/s ≥ this × the minimal baseline's. */
  perMessageVsMinimal: 1.6,
  /** Under the RDS-like network: per-message round trips per message ≤ this (`prepare: false`). */
  perMessageRoundTrips: 3.5,
  /** Under the RDS-like network at concurrency 1: per-batch msgs/s ≥ this × the minimal batch's. */
  perBatchVsMinimalBatch: 1.5,
  /** Under the RDS-like network: per-batch round trips per message ≤ this (`prepare: false`, batches of 10). */
  perBatchRoundTrips: 1.3,
  /** The bundle's size ≤ this many bytes. */
  bundleBytes: 600 * 1024,
  /** The bundle's cold load ≤ a bare `node` start + this many milliseconds. */
  coldLoadOverBareNodeMs: 35,
};

/** What each mode's msgs/s is compared with in the tables (`× ref`). */
export const REFERENCE_MODE: Partial<Record<BenchMode, BenchMode>> = {
  baseline: 'minimal',
  'per-message': 'minimal',
  'per-message-prepared': 'minimal',
  'per-batch': 'minimal-batch',
  'per-batch-prepared': 'minimal-batch',
};

const LATENCY_BASIS: Record<BenchMode, string> = {
  baseline: 'txn per msg',
  minimal: 'txn per msg',
  'minimal-batch': 'batch ÷ records',
  'per-message': 'record time',
  'per-message-prepared': 'record time',
  'per-batch': 'batch ÷ records',
  'per-batch-prepared': 'batch ÷ records',
};

/** Everything one bench run measured. */
export interface BenchReport {
  /** Loopback: every configuration straight to the database. */
  readonly results: readonly ConfigResult[];
  /** Under the RDS-like network (concurrency 1; empty when skipped). */
  readonly network: readonly ConfigResult[];
  /** The bundle line (absent from `--only MODES` runs). */
  readonly bundle?: BundleBench;
}

const plain = { style: { head: [], border: [] } };

/**
 * A throughput table: one row per mode and concurrency, with msgs/s as a ratio to the mode's reference
 * ({@link REFERENCE_MODE}: the minimal hand-written transaction of the same shape) and, for per-batch rows, to
 * per-message.
 */
export function renderThroughput(results: readonly ConfigResult[]): string {
  const table = new Table({
    ...plain,
    head: ['mode', 'conc.', 'msgs/s', '× ref', 'ref', 'p50', 'p99', 'latency =', 'RT/msg', 'stmts/msg'],
    colAligns: ['left', 'right', 'right', 'right', 'left', 'right', 'right', 'left', 'right', 'right'],
  });
  for (const row of results) {
    const reference = REFERENCE_MODE[row.mode];
    const base = results.find((r) => r.mode === reference && r.concurrency === row.concurrency);
    table.push([
      row.mode,
      row.concurrency,
      row.messagesPerSecond.toFixed(0),
      !base
        ? ''
        : row.vsBaseline !== undefined
          ? formatRatio(row.vsBaseline, 1)
          : formatRatio(row.messagesPerSecond, base.messagesPerSecond),
      base ? reference : '',
      formatMs(row.p50Ms),
      formatMs(row.p99Ms),
      LATENCY_BASIS[row.mode],
      row.roundTripsPerMessage.toFixed(2),
      row.statementsPerMessage.toFixed(2),
    ]);
  }
  return table.toString();
}

/** The targets with the measured figure beside each and met/MISSED. */
export function renderTargets(report: BenchReport): string {
  const table = new Table({ ...plain, head: ['target', 'measured', ''] });
  const find = (mode: BenchMode) => report.network.find((r) => r.mode === mode && r.concurrency === 1);
  const ratio = (mode: BenchMode) => {
    const row = find(mode);
    const reference = REFERENCE_MODE[mode];
    const base = reference ? find(reference) : undefined;
    if (!row || !base) return undefined;
    return row.vsBaseline ?? row.messagesPerSecond / base.messagesPerSecond;
  };
  const network = `RDS-like network`;
  const perMessage = ratio('per-message');
  if (perMessage !== undefined) {
    table.push([
      `per-message ≥ ${TARGETS.perMessageVsMinimal} × the minimal baseline's msgs/s, ${network}, concurrency 1`,
      `${perMessage.toFixed(2)}×`,
      verdict(perMessage >= TARGETS.perMessageVsMinimal),
    ]);
  }
  const perMessageRow = find('per-message');
  if (perMessageRow) {
    table.push([
      `per-message ≤ ${TARGETS.perMessageRoundTrips} round trips per message (prepare: false)`,
      perMessageRow.roundTripsPerMessage.toFixed(2),
      verdict(perMessageRow.roundTripsPerMessage <= TARGETS.perMessageRoundTrips + 1e-9),
    ]);
  }
  const perBatch = ratio('per-batch');
  if (perBatch !== undefined) {
    table.push([
      `per-batch ≥ ${TARGETS.perBatchVsMinimalBatch} × the minimal batch's msgs/s, ${network}, concurrency 1`,
      `${perBatch.toFixed(2)}×`,
      verdict(perBatch >= TARGETS.perBatchVsMinimalBatch),
    ]);
  }
  const perBatchRow = find('per-batch');
  if (perBatchRow) {
    table.push([
      `per-batch ≤ ${TARGETS.perBatchRoundTrips} round trips per message (prepare: false, batches of 10)`,
      perBatchRow.roundTripsPerMessage.toFixed(2),
      verdict(perBatchRow.roundTripsPerMessage <= TARGETS.perBatchRoundTrips + 1e-9),
    ]);
  }
  if (report.bundle) table.push(...bundleTargetRows(report.bundle));
  return table.toString();
}

/**
 * The statement audit: per mode, the distinct statements its counted messages sent and those that meet an RDS
 * Proxy pinning condition ({@link pinningReasons}), with the conditions. Named prepared statements are expected
 * of the `-prepared` modes (`DB_PREPARE=true`, for direct connections only).
 */
export function renderPinningAudit(results: readonly ConfigResult[]): string {
  const seen = new Map<BenchMode, Map<string, SeenStatement>>();
  for (const row of results) {
    const statements = seen.get(row.mode) ?? new Map<string, SeenStatement>();
    for (const statement of row.statements ?? [])
      statements.set(`${statement.name}\u0000${statement.text}`, statement);
    seen.set(row.mode, statements);
  }
  const lines: string[] = [];
  for (const [mode, statements] of seen) {
    const pinning = [...statements.values()]
      .map((statement) => ({ statement, reasons: pinningReasons(statement) }))
      .filter((found) => found.reasons.length > 0);
    const reasons = [...new Set(pinning.flatMap((found) => found.reasons))];
    lines.push(
      `  ${mode}: ${statements.size} distinct statements, ${
        pinning.length === 0 ? 'none pins' : `${pinning.length} pin (${reasons.join(', ')})`
      }`,
    );
    for (const found of pinning.filter((f) => !f.reasons.every((r) => r === 'named prepared statement'))) {
      lines.push(
        `    ${found.reasons.join(', ')}: ${found.statement.text.replace(/\s+/g, ' ').slice(0, 120)}`,
      );
    }
  }
  return lines.join('\n');
}

/** The bundle targets' rows: the default worker's deployed bytes, and its cold load over a bare `node` start. */
function bundleTargetRows({ bundle, coldLoad, floors }: BundleBench): string[][] {
  const { medianMs, p25Ms, p75Ms } = coldLoad.overBareNode;
  return [
    [
      `bundle ≤ ${formatKiB(TARGETS.bundleBytes)} (everything deployed, default worker: ${describeWorkerBundleProfile(bundle.profile)})`,
      formatKiB(bundle.bytes),
      verdict(bundle.bytes <= TARGETS.bundleBytes),
    ],
    [
      `cold load ≤ bare node start + ${TARGETS.coldLoadOverBareNodeMs} ms (median of ${coldLoad.runs} paired runs)`,
      `+${formatMs(medianMs)} (interquartile ${formatMs(p25Ms)}–${formatMs(p75Ms)})`,
      verdict(medianMs <= TARGETS.coldLoadOverBareNodeMs),
    ],
    ...coldStartFloorTargetRows(floors),
  ];
}

/** The two bundle targets alone, for `--only bundle`. */
export function renderBundleTargets(bench: BundleBench): string {
  const table = new Table({ ...plain, head: ['target', 'measured', ''] });
  table.push(...bundleTargetRows(bench));
  return table.toString();
}

/**
 * The bundle's size per profile, the default bundle's largest packages, the cold-load medians — with what any ESM
 * handler with postgres.js pays before its own code runs, to read the rest against — and what the lazy parts add
 * on first use.
 */
export function renderBundle({ bundle, variants, coldLoad, floors }: BundleBench): string {
  const top = bundle.byPackage
    .slice(0, 6)
    .map((entry) => `${entry.name} ${formatKiB(entry.bytes)}`)
    .join(', ');
  const firstUse: Record<string, string> = {
    '@aws-sdk/client-sqs': 'first backoff',
    '@aws-sdk/rds-signer': 'first IAM-authenticated connection',
    '@aws-sdk/client-s3': 'first payloadRef',
  };
  // Signed: a median below bare node's is machine noise, and shows as such.
  const over = (ms: number) => {
    const difference = ms - coldLoad.bareNodeMs;
    return `${difference < 0 ? '−' : '+'}${formatMs(Math.abs(difference))}`;
  };
  return [
    `worker bundle (${describeWorkerBundleProfile(bundle.profile)}, the default): ${formatKiB(bundle.bytes)} ` +
      `deployed (index.mjs and chunks/), of which a cold start loads ${formatKiB(bundle.coldBytes)}; source maps ` +
      `${formatKiB(bundle.mapBytes)}, separate files`,
    ...variants.map(
      (variant) =>
        `  bundled for ${describeWorkerBundleProfile(variant.profile)}: ${formatKiB(variant.bytes)} deployed, ` +
        `${formatKiB(variant.coldBytes)} loaded by a cold start`,
    ),
    `  largest parts: ${top}`,
    `cold load, median of ${coldLoad.runs} fresh processes: bare \`node -e 0\` ${formatMs(coldLoad.bareNodeMs)}; ` +
      `import of the bundle ${formatMs(coldLoad.bundleMs)} (${over(coldLoad.bundleMs)}; paired with each run's ` +
      `bare start, +${formatMs(coldLoad.overBareNode.medianMs)}), ` +
      `${formatMs(coldLoad.bundleWithSourceMapsMs)} with --enable-source-maps as the stack sets ` +
      `(${over(coldLoad.bundleWithSourceMapsMs)}), ${formatMs(coldLoad.bundleWithTracingMs)} bundled for tracing ` +
      `with POWERTOOLS_TRACE_ENABLED=true (${over(coldLoad.bundleWithTracingMs)})`,
    `  the DynamoDB worker's bundle with WORKER_STORE=dynamodb: ${formatMs(coldLoad.dynamodb.bundleMs)} ` +
      `(${over(coldLoad.dynamodb.bundleMs)}; paired, +${formatMs(coldLoad.dynamodb.overBareNodeMs)})`,
    `  what any handler pays: an empty ESM module ${over(coldLoad.emptyModuleMs)}; importing only the Node.js ` +
      `built-ins postgres.js loads ${over(coldLoad.postgresBuiltinsMs)}`,
    ...coldLoad.lazy.map(
      (part) =>
        `  loaded on first use: ${part.loads} ${formatKiB(part.bytes)}, +${formatMs(part.extraMs)} ` +
        `(${firstUse[part.loads] ?? 'on demand'})`,
    ),
    renderColdStartFloors(floors),
  ].join('\n');
}
