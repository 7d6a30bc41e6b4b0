import { Token } from 'aws-cdk-lib';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../lambda/worker/resolve-payload.ts';
import { type PollerSettings, XRAY_DAEMON_MEMORY_MIB } from './runtimes/fargate/resolve-poller-settings.ts';
import type { WorkerSettings } from './worker-settings.ts';

const MIB = 1024 * 1024;

/**
 * Peak memory of a worker per byte of JSON `payloadRef` payload it holds, over the object's size: its bytes, its
 * text, the parsed value, the schema's validated copy, and the garbage V8 has not collected yet (the young
 * generation, up to a tenth of the function's memory under Lambda's flags, fills during a parse). The largest
 * that `npm run bench -- --only payload-memory` measured (10.0, an 8 MiB array of numbers; 7–9 for records) with a
 * tenth added: docs/performance.md has the figures. Arrays of small numbers are about the densest JSON there is.
 *
 * @internal
 */
export const PAYLOAD_MEMORY_FACTOR = 11;

/** RSS of a warm worker before it holds a payload (connections open, the S3 client made), MiB, rounded up. */
export const WORKER_BASELINE_MIB = 64;

/** The function memory the stack deploys by default (`memorySize`), MB. */
export const DEFAULT_MEMORY_MB = 512;

/**
 * The largest `payloadRef` object a worker of `memoryMiB` can hold `recordsInFlight` of at once:
 * (memory − baseline) ÷ (factor × records in flight), in bytes (0 when the memory is below the baseline).
 *
 * @internal
 */
export function safePayloadBytes(memoryMiB: number, recordsInFlight: number): number {
  const room = (memoryMiB - WORKER_BASELINE_MIB) * MIB;
  return Math.max(0, Math.floor(room / (PAYLOAD_MEMORY_FACTOR * recordsInFlight)));
}

/**
 * The payload limit the stack gives a worker that sets none: 64 MiB, or less when the memory cannot hold
 * `recordsInFlight` payloads of that size ({@link safePayloadBytes}, rounded down to whole MiB from 1 MiB on).
 *
 * @internal
 */
export function defaultPayloadLimit(memoryMiB: number, recordsInFlight: number): number {
  const safe = safePayloadBytes(memoryMiB, recordsInFlight);
  return Math.min(DEFAULT_MAX_PAYLOAD_BYTES, safe >= MIB ? Math.floor(safe / MIB) * MIB : safe);
}

/** What bounds a worker's payload memory: its memory, and how many records hold a payload at once and why. */
export interface PayloadMemory {
  /**
   * The setting that gives the memory and its value in MiB: `memorySize` (MB) or `taskMemoryMiB`; and what of it
   * another process of the task takes (`reserved`: the X-Ray daemon beside a traced poller).
   */
  readonly memory: {
    readonly name: 'memorySize' | 'taskMemoryMiB';
    readonly mib: number;
    readonly reserved?: { readonly mib: number; readonly by: string };
  };
  /** Records that hold a payload at once, the setting that says so (`recordConcurrency 2`) and how to lower it. */
  readonly recordsInFlight: { readonly count: number; readonly why: string; readonly lower: string };
}

/**
 * The worker's payload limit (`maxPayloadBytes`, `PAYLOAD_MAX_BYTES`): the given one, refused when the memory
 * cannot hold the records in flight at that size, or {@link defaultPayloadLimit}. The rule is memory ≥ baseline +
 * reserved + factor × records in flight × limit, with the measured factor and baseline above. Values that are tokens are not
 * checked; with one, a limit must be given. Problems go to `problems`, each naming the values and the fixes.
 *
 * @internal
 */
export function resolvePayloadLimit(
  given: number | undefined,
  budget: PayloadMemory,
  problems: string[],
): number {
  const { memory, recordsInFlight } = budget;
  const tokens = [memory.mib, recordsInFlight.count].some((value) => Token.isUnresolved(value));
  if (given !== undefined && Token.isUnresolved(given)) return given;
  if (tokens) {
    if (given === undefined) {
      problems.push(
        `${memory.name} or the records in flight (${recordsInFlight.why}) is a deploy-time token, so maxPayloadBytes has no default; set maxPayloadBytes`,
      );
      return DEFAULT_MAX_PAYLOAD_BYTES;
    }
    return given;
  }
  const unit = memory.name === 'memorySize' ? 'MB' : 'MiB';
  const reservedMiB = memory.reserved?.mib ?? 0;
  const reservedNote = memory.reserved ? ` + ${reservedMiB} MiB (${memory.reserved.by})` : '';
  const available = memory.mib - reservedMiB;
  if (given === undefined) {
    const limit = defaultPayloadLimit(available, recordsInFlight.count);
    if (limit < 1) {
      problems.push(
        `${memory.name} (${memory.mib} ${unit}) leaves no room for payloadRef objects beside a worker's ${WORKER_BASELINE_MIB} MiB${reservedNote} with ${records(recordsInFlight.count)} in flight (${recordsInFlight.why}); raise ${memory.name} or ${recordsInFlight.lower}`,
      );
    }
    return limit;
  }
  if (!Number.isInteger(given) || given < 1 || given > 1024 * MIB) return given; // the range rule reports it
  const neededMiB = Math.ceil(
    WORKER_BASELINE_MIB + reservedMiB + (PAYLOAD_MEMORY_FACTOR * recordsInFlight.count * given) / MIB,
  );
  if (neededMiB > memory.mib) {
    const safe = safePayloadBytes(available, recordsInFlight.count);
    problems.push(
      `maxPayloadBytes (${given} bytes) is more than ${memory.name} (${memory.mib} ${unit}) can hold: ${records(recordsInFlight.count)} in flight (${recordsInFlight.why}) × ${fmtMiB(given)} × ${PAYLOAD_MEMORY_FACTOR} (peak memory per byte of a JSON payload, measured: docs/performance.md) + ${WORKER_BASELINE_MIB} MiB (the worker)${reservedNote} = ${neededMiB} MiB; lower maxPayloadBytes to ${safe} bytes or less, raise ${memory.name} to ${neededMiB} ${unit}, or ${recordsInFlight.lower}`,
    );
  }
  return given;
}

const records = (count: number) => `${count} record${count === 1 ? '' : 's'}`;
const fmtMiB = (bytes: number) => `${Number((bytes / MIB).toFixed(2))} MiB`;

/**
 * What bounds the worker's payload memory: the function's memory (the task's with runtime "fargate") and the
 * records that hold a payload at once. Per message, `recordConcurrency`; per batch on Lambda, the whole batch: its
 * payloads are read before the batch transaction opens (no connection waits on S3) and kept until it commits (a
 * redo needs them again). The poller never holds more than `recordConcurrency` records, in either mode.
 *
 * @internal
 */
export function payloadMemory(
  props: Pick<WorkerSettings, 'commitMode' | 'tracing'>,
  values: {
    fargate: boolean;
    poller: PollerSettings | undefined;
    memorySize: number;
    batchSize: number;
    recordConcurrency: number;
  },
): PayloadMemory {
  const { fargate, poller, memorySize, batchSize, recordConcurrency } = values;
  // A traced poller's task runs the X-Ray daemon beside it, within the same task memory.
  const memory =
    fargate && poller
      ? {
          name: 'taskMemoryMiB' as const,
          mib: poller.taskMemoryMiB,
          ...(props.tracing
            ? { reserved: { mib: XRAY_DAEMON_MEMORY_MIB, by: 'the X-Ray daemon beside it, tracing' } }
            : {}),
        }
      : { name: 'memorySize' as const, mib: memorySize };
  const recordsInFlight =
    !fargate && props.commitMode === 'per-batch'
      ? {
          count: batchSize,
          why: `batchSize ${batchSize}: commitMode per-batch reads a batch's payloads before its transaction and keeps them until it commits`,
          lower: 'lower batchSize (or use commitMode per-message)',
        }
      : {
          count: recordConcurrency,
          why: `recordConcurrency ${recordConcurrency}`,
          lower: 'lower recordConcurrency',
        };
  return { memory, recordsInFlight };
}
