import Table from 'cli-table3';
import {
  DEFAULT_MEMORY_MB,
  PAYLOAD_MEMORY_FACTOR,
  WORKER_BASELINE_MIB,
} from '../../lib/resolve-payload-limit.ts';
import type { BenchPayloadShape } from './bench-payload-shapes.ts';
import { IN_FLIGHT, type PayloadMemoryBench, TABLE_MEMORY_MB } from './payload-memory.ts';
import type { PayloadMemoryRow } from './payload-memory-rig.ts';
import { median } from './statistics.ts';

/** Sizes below this are left out of the largest factor: there a payload costs less than the worker's noise. */
const FACTOR_FROM_MIB = 8;

const cell = (row: PayloadMemoryRow | undefined) =>
  row === undefined
    ? '—'
    : `${row.peakMiB.toFixed(0)} MiB (×${row.factor.toFixed(1)})${row.completed === row.atOnce ? '' : ' NOT COMPLETED'}`;

/**
 * The payload-memory line: peak RSS of the worker per `payloadRef` size, shape and records at once; the worker's
 * baseline; the largest factor measured beside the one the stack uses; and the default function at the limit the
 * stack derives for it.
 */
export function renderPayloadMemory(bench: PayloadMemoryBench): string {
  return [renderTable(bench), renderInFlight(bench)].join('\n');
}

/** The peak per record in flight, inline and by reference, per commit mode, beside the stack's bound. */
function renderInFlight({ inFlight }: PayloadMemoryBench): string {
  const table = new Table({
    style: { head: [], border: [] },
    head: ['payload (records shape)', 'per-message', 'per-batch'],
    colAligns: ['left', 'right', 'right'],
  });
  const kinds = [...new Map(inFlight.map((row) => [`${row.carrier} ${row.sizeMiB}`, row])).values()];
  const perRecord = (row: PayloadMemoryRow | undefined) =>
    row === undefined
      ? '—'
      : `${row.perRecordMiB.toFixed(0)} MiB (×${row.factor.toFixed(1)}; peak ${row.peakMiB.toFixed(0)})` +
        `${row.completed === row.atOnce ? '' : ' NOT COMPLETED'}`;
  for (const kind of kinds) {
    const of = (mode: string) =>
      inFlight.find(
        (row) => row.carrier === kind.carrier && row.sizeMiB === kind.sizeMiB && row.commitMode === mode,
      );
    const label =
      kind.carrier === 'inline'
        ? `inline, ${(kind.sizeMiB * 1024).toFixed(0)} KiB (a 1 MiB message)`
        : `payloadRef, ${kind.sizeMiB} MiB`;
    table.push([label, perRecord(of('per-message')), perRecord(of('per-batch'))]);
  }
  return [
    `Payload memory per record in flight: (peak − baseline) ÷ ${IN_FLIGHT}, ${IN_FLIGHT} records in flight (per-message: ` +
      `recordConcurrency ${IN_FLIGHT}; per-batch: one batch of ${IN_FLIGHT}, its payloads read before its transaction and kept ` +
      `until it commits), V8 flags of ${TABLE_MEMORY_MB} MB; (×f) = per record ÷ payload size. Inline bodies are in the ` +
      'event before the baseline, as the Lambda runtime hands them over: their row is what the worker adds (parsed and validated copies).',
    table.toString(),
    `  the stack bounds the payload limit by memory ≥ ${WORKER_BASELINE_MIB} MiB + ×${PAYLOAD_MEMORY_FACTOR} × records in flight × limit ` +
      '(lib/resolve-payload-limit.ts; per-batch on Lambda, records in flight = batchSize)',
    `  largest factor per record in flight from ${FACTOR_FROM_MIB} MiB: ${(
      ['per-message', 'per-batch'] as const
    )
      .map((mode) => {
        const factors = inFlight
          .filter(
            (row) =>
              row.commitMode === mode && row.carrier === 'payloadRef' && row.sizeMiB >= FACTOR_FROM_MIB,
          )
          .map((row) => row.factor);
        const largest = Math.max(...factors);
        return `${mode} ×${largest.toFixed(1)} (${largest <= PAYLOAD_MEMORY_FACTOR ? 'within' : 'ABOVE'} ×${PAYLOAD_MEMORY_FACTOR})`;
      })
      .join(', ')}`,
  ].join('\n');
}

/** The table per `payloadRef` size, shape and records at once, with the bare worker and the default function. */
function renderTable(bench: PayloadMemoryBench): string {
  const { rows, checks } = bench;
  const find = (shape: BenchPayloadShape, sizeMiB: number, atOnce: number) =>
    rows.find((row) => row.shape === shape && row.sizeMiB === sizeMiB && row.atOnce === atOnce);
  const table = new Table({
    style: { head: [], border: [] },
    head: ['payloadRef', 'records × 1', 'records × 2', 'numbers × 1', 'numbers × 2'],
    colAligns: ['left', 'right', 'right', 'right', 'right'],
  });
  for (const sizeMiB of [...new Set(rows.map((row) => row.sizeMiB))]) {
    table.push([
      `${sizeMiB} MiB`,
      cell(find('records', sizeMiB, 1)),
      cell(find('records', sizeMiB, 2)),
      cell(find('numbers', sizeMiB, 1)),
      cell(find('numbers', sizeMiB, 2)),
    ]);
  }
  const largest = (shape: BenchPayloadShape) =>
    Math.max(
      ...rows.filter((row) => row.shape === shape && row.sizeMiB >= FACTOR_FROM_MIB).map((row) => row.factor),
    );
  const all = [...rows, ...checks];
  const checkLines = checks.map(
    (row) =>
      `  ${row.atOnce} × ${row.sizeMiB.toFixed(0)} MiB ${row.shape}: peak ${row.peakMiB.toFixed(0)} MiB of ${row.memorySizeMb} MB` +
      `${row.completed === row.atOnce ? '' : ' (NOT COMPLETED)'}`,
  );
  return [
    `Payload memory: peak RSS of a worker (the bundled worker in a process of its own, Lambda's V8 flags for ${TABLE_MEMORY_MB} MB, ` +
      'where V8 collects lazily) reading, verifying, parsing and validating JSON payloadRef objects from fauxqs S3 and handling ' +
      'them in its transaction; × 2 = recordConcurrency 2, each with its own object. (×f) = (peak − baseline) ÷ bytes held. ' +
      'records: lines of five fields (~110 bytes each); numbers: an array of small integers (a value every 4 bytes):',
    table.toString(),
    `  bare worker: ${median(all.map((row) => row.coldMiB)).toFixed(0)} MiB after its cold start, ` +
      `${Math.max(...all.map((row) => row.baselineMiB)).toFixed(0)} MiB warm (one small payloadRef handled; the stack counts ${WORKER_BASELINE_MIB} MiB)`,
    `  largest factor from ${FACTOR_FROM_MIB} MiB: records ×${largest('records').toFixed(1)}, numbers ×${largest('numbers').toFixed(1)}; ` +
      `the stack uses ×${PAYLOAD_MEMORY_FACTOR} (lib/resolve-payload-limit.ts)`,
    `  the default function (${DEFAULT_MEMORY_MB} MB, its V8 flags) at the limit the stack derives for 1 and 2 records in flight:`,
    ...checkLines,
  ].join('\n');
}
