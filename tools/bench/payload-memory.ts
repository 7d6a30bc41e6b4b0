import type postgres from 'postgres';
import { DEFAULT_MEMORY_MB, defaultPayloadLimit } from '../../lib/resolve-payload-limit.ts';
import { type PayloadMemoryRow, startPayloadMemoryRig } from './payload-memory-rig.ts';

const MIB = 1024 * 1024;

/** The payload-memory line of the bench. */
export interface PayloadMemoryBench {
  /** Every size × shape × records at once, under the V8 flags of {@link TABLE_MEMORY_MB}. */
  readonly rows: readonly PayloadMemoryRow[];
  /** The stack's default function (512 MB) at the payload limit the stack derives for 1 and 2 records in flight. */
  readonly checks: readonly PayloadMemoryRow[];
  /**
   * Records in flight, records shape, under the flags of {@link TABLE_MEMORY_MB}: {@link IN_FLIGHT} payloads inline
   * (a message of SQS's largest size) and by reference (1, 8 and 64 MiB), per message (that many at once) and per
   * batch (one batch of that many), each row with its peak per record in flight.
   */
  readonly inFlight: readonly PayloadMemoryRow[];
}

/** Records in flight in the rows of {@link PayloadMemoryBench.inFlight}. */
export const IN_FLIGHT = 2;

/** The inline payload of those rows: what fits in a message of SQS's largest size (1 MiB) beside its envelope. */
export const INLINE_PAYLOAD_BYTES = 1_040_000;

/**
 * The function memory whose V8 flags the table runs with: with room to spare V8 collects lazily and keeps more
 * garbage (a 512 MB function's flags collect sooner and peak lower), so the table shows the worst case.
 */
export const TABLE_MEMORY_MB = 3008;

/** Options of {@link benchPayloadMemory}. */
export interface PayloadMemoryOptions {
  /** A migrated database the worker writes its inbox rows to. */
  readonly admin: postgres.Sql;
  readonly url: string;
  readonly log: (line: string) => void;
  /** Payload sizes, MiB. @default [1, 8, 16, 32, 64] */
  readonly sizesMiB?: readonly number[];
}

/**
 * The payload-memory line: peak RSS of a real worker (`payload-memory-rig.ts`) per `payloadRef` size, shape and
 * records at once under the V8 flags of {@link TABLE_MEMORY_MB}; then the stack's default function at the limit
 * the stack derives for it (`lib/resolve-payload-limit.ts`), under its own flags; then the peak per record in
 * flight, inline and by reference, in both commit modes.
 */
export async function benchPayloadMemory(options: PayloadMemoryOptions): Promise<PayloadMemoryBench> {
  const sizes = options.sizesMiB ?? [1, 8, 16, 32, 64];
  const rig = await startPayloadMemoryRig(options);
  try {
    const rows: PayloadMemoryRow[] = [];
    for (const shape of ['records', 'numbers'] as const) {
      for (const sizeMiB of sizes) {
        for (const atOnce of [1, 2]) {
          rows.push(await rig.run({ shape, bytes: sizeMiB * MIB, atOnce, memorySizeMb: TABLE_MEMORY_MB }));
        }
      }
    }
    const checks: PayloadMemoryRow[] = [];
    for (const atOnce of [1, 2]) {
      const bytes = defaultPayloadLimit(DEFAULT_MEMORY_MB, atOnce);
      for (const shape of ['records', 'numbers'] as const) {
        checks.push(await rig.run({ shape, bytes, atOnce, memorySizeMb: DEFAULT_MEMORY_MB }));
      }
    }
    const inFlight: PayloadMemoryRow[] = [];
    for (const commitMode of ['per-message', 'per-batch'] as const) {
      const base = {
        shape: 'records',
        atOnce: IN_FLIGHT,
        memorySizeMb: TABLE_MEMORY_MB,
        commitMode,
      } as const;
      inFlight.push(await rig.run({ ...base, bytes: INLINE_PAYLOAD_BYTES, carrier: 'inline' }));
      for (const sizeMiB of [1, 8, 64]) inFlight.push(await rig.run({ ...base, bytes: sizeMiB * MIB }));
    }
    return { rows, checks, inFlight };
  } finally {
    await rig.close();
  }
}
