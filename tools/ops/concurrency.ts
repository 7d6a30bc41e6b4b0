import { MAPPING_CONCURRENCY_RANGE, parsePin } from '../../lambda/breaker/fleet-limit.ts';
import {
  CONCURRENCY_PIN_TAG,
  type EventSourceMappingClient,
  type MappingSnapshot,
  pinMapping,
  readMapping,
  setMaxConcurrency,
  unpinMapping,
} from '../../lambda/breaker/mapping-control.ts';
import { OperationError, UsageError } from './errors.ts';
import type { OpsOutput } from './output.ts';
import { emit, recordTable } from './output.ts';

/** Collaborators of the `concurrency` commands. */
export interface ConcurrencyDeps {
  /** Lambda control plane (a `LambdaClient`; a recorded fake in tests). */
  readonly lambda: EventSourceMappingClient;
  readonly out: OpsOutput;
}

/** The bounds the breaker's control loop moves the mapping between, as the operator gives them. */
export interface ConcurrencyBounds {
  /** The breaker's `CONCURRENCY_FLOOR`. @default 2 */
  readonly floor?: number;
  /** The configured `MaximumConcurrency` (the construct's `maxConcurrency`, `BREAKER_MAX_CONCURRENCY`); unknown if not given. */
  readonly ceiling?: number;
}

/** What `concurrency status|pin|unpin` print (`--json`). */
export interface ConcurrencyStatusResult {
  readonly mappingUuid: string;
  /** Lambda's `State`: Enabled, Disabled, Enabling, Disabling, Updating. */
  readonly state: string;
  /** The mapping's `ScalingConfig.MaximumConcurrency` now; null on a provisioned mapping. */
  readonly maxConcurrency: number | null;
  readonly floor: number;
  readonly ceiling: number | null;
  /** The pin (the {@link CONCURRENCY_PIN_TAG} tag's value), null when the control loop moves the limit. */
  readonly pinned: number | string | null;
  /** Who moves the limit: `pinned`, `held by the breaker` (open or held) or `adaptive`. */
  readonly control: 'pinned' | 'held by the breaker' | 'adaptive';
}

const { min, max } = MAPPING_CONCURRENCY_RANGE;

function describe(mapping: MappingSnapshot, bounds: ConcurrencyBounds): ConcurrencyStatusResult {
  const pin = parsePin(mapping.pin);
  return {
    mappingUuid: mapping.uuid,
    state: mapping.state,
    maxConcurrency: mapping.maxConcurrency ?? null,
    floor: bounds.floor ?? min,
    ceiling: bounds.ceiling ?? null,
    pinned: pin === undefined ? null : pin === 'invalid' ? (mapping.pin as string) : pin,
    control:
      pin !== undefined
        ? 'pinned'
        : !mapping.enabled || mapping.hold !== undefined
          ? 'held by the breaker'
          : 'adaptive',
  };
}

function print(out: OpsOutput, result: ConcurrencyStatusResult): ConcurrencyStatusResult {
  emit(out, result, () => recordTable({ ...result }));
  return result;
}

/** The pin an operator typed, as a `MaximumConcurrency`, or a {@link UsageError} naming the value and the range. */
export function parsePinArgument(value: string): number {
  const pin = Number(value);
  if (!Number.isInteger(pin) || pin < min || pin > max) {
    throw new UsageError(
      `concurrency pin: ${JSON.stringify(value)} is not a MaximumConcurrency: give a whole number from ${min} to ${max} (AWS's range for an SQS event source mapping)`,
    );
  }
  return pin;
}

/**
 * `concurrency status`: the mapping's `MaximumConcurrency`, the floor and the ceiling the breaker's control loop
 * moves it between, and whether an operator pinned it. Reads only (GetEventSourceMapping, ListTags).
 */
export async function concurrencyStatus(
  deps: ConcurrencyDeps,
  options: { mappingUuid: string } & ConcurrencyBounds,
): Promise<ConcurrencyStatusResult> {
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid), options));
}

/**
 * `concurrency pin <n>`: tags the mapping with the pin, then sets its `MaximumConcurrency` to `n` (ScalingConfig
 * only: a disabled mapping stays disabled). The breaker's control loop sees the tag on its next tick and never
 * moves the limit while it is there; the breaker itself still opens and closes the mapping.
 */
export async function concurrencyPin(
  deps: ConcurrencyDeps,
  options: { mappingUuid: string; value: string } & ConcurrencyBounds,
): Promise<ConcurrencyStatusResult> {
  const pin = parsePinArgument(options.value);
  const mapping = await readMapping(deps.lambda, options.mappingUuid);
  if (mapping.pollers) {
    throw new OperationError(
      `Mapping ${options.mappingUuid} runs provisioned pollers: it has no MaximumConcurrency to pin; change ProvisionedPollerConfig instead`,
    );
  }
  await pinMapping(deps.lambda, mapping.arn, pin);
  await setMaxConcurrency(deps.lambda, options.mappingUuid, pin);
  const above = options.ceiling !== undefined && pin > options.ceiling;
  deps.out.note(
    `Mapping ${options.mappingUuid} pinned at MaximumConcurrency ${pin}${above ? ` (above the ceiling ${options.ceiling}: check the worker's reserved concurrency and the database's connections)` : ''}; "sqs-worker concurrency unpin" hands it back to the breaker.`,
  );
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid), options));
}

/**
 * `concurrency unpin`: removes the pin tag. The limit stays where it is until the breaker's control loop decides
 * its next window, then moves one step at a time again (down at once on contention, up by one per quiet window).
 */
export async function concurrencyUnpin(
  deps: ConcurrencyDeps,
  options: { mappingUuid: string } & ConcurrencyBounds,
): Promise<ConcurrencyStatusResult> {
  const mapping = await readMapping(deps.lambda, options.mappingUuid);
  if (mapping.pin !== undefined) await unpinMapping(deps.lambda, mapping.arn);
  deps.out.note(
    mapping.pin !== undefined
      ? `Mapping ${options.mappingUuid} unpinned (was ${mapping.pin}); the breaker moves its MaximumConcurrency again.`
      : `Mapping ${options.mappingUuid} was not pinned.`,
  );
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid), options));
}
