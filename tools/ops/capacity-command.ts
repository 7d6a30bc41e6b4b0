import type { CapacityResult } from '../../lib/stores/postgres/capacity.ts';
import { capacityStore } from './capacity-store.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { optionFlag, parseOptionalPositive } from './parse-options.ts';

/**
 * `sqs-worker capacity`: the safe worker concurrency by the store's formula ({@link OpsStore.capacity}: connections
 * for PostgreSQL, the write budget for DynamoDB), from the command's flags as commander gives them. The inputs both
 * formulas share are parsed here; a flag of another store's formula is refused rather than ignored
 * ({@link capacityStore}). Needs no database, table or queue.
 *
 * @throws UsageError (exit 2) naming a flag that is misplaced, missing or not a number.
 */
export function capacityCommand(
  deps: { readonly store: OpsStore; readonly out: OpsOutput },
  flags: Readonly<Record<string, unknown>>,
): CapacityResult {
  const shared = {
    downstreamRateLimit: parseOptionalPositive(flags.downstreamRateLimit, '--downstream-rate-limit'),
    callsPerMessage: parseOptionalPositive(flags.callsPerMessage, '--calls-per-message'),
    lockContentionSafeParallelism: parseOptionalPositive(
      flags.lockContentionSafeParallelism,
      '--lock-contention-safe-parallelism',
    ),
  };
  // The flags given (those of one store's formula have no default, so set means typed).
  const given = Object.keys(flags)
    .filter((name) => flags[name] !== undefined)
    .map(optionFlag);
  capacityStore(deps.store.kind, given);
  return deps.store.capacity({ out: deps.out }, { shared, flags });
}
