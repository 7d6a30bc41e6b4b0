import type { ProvisionedPollers } from '../../resolve-worker-settings.ts';
import {
  ESM_MAX_CONCURRENCY,
  ESM_MIN_CONCURRENCY,
  isToken,
  MAX_RESERVED_CONCURRENCY,
  type SettingChecks,
} from '../../setting-checks.ts';
import type { CapacityResult } from '../../stores/postgres/capacity.ts';
import type { WorkerSettings } from '../../worker-settings.ts';

/**
 * Concurrent invocations one provisioned SQS poller drives at most (AWS: "each poller can handle up to 10
 * concurrent invokes"): the capacity formula's safe concurrency divided by this gives the maximum pollers.
 */
export const INVOKES_PER_POLLER = 10;
/** The SQS event source limits of `ProvisionedPollerConfig`. */
const MIN_POLLERS = 2;
const MAX_MINIMUM_POLLERS = 200;
const MAX_MAXIMUM_POLLERS = 2000;

/** The capacity formula's result as the scaling rules read it. */
export interface CapacityBound {
  readonly capacity: CapacityResult | undefined;
  readonly capacityTokens: boolean;
  /** What raises the capacity, for the messages. */
  readonly capacityFix: string;
}

/**
 * Mode `maximum-concurrency`: the event source's `MaximumConcurrency` (default: the safe worker concurrency,
 * within the event source's 2..1000) and the reserved concurrency that must carry it, or Lambda throttles the
 * poller.
 *
 * @internal
 */
export function resolveMaximumConcurrency(
  props: Omit<WorkerSettings, 'vpc'>,
  bound: CapacityBound,
  range: SettingChecks['range'],
  problems: string[],
): { maxConcurrency: number; reservedConcurrency: number } {
  const { capacity } = bound;
  for (const name of ['minimumPollers', 'maximumPollers'] as const) {
    if (props[name] !== undefined) {
      problems.push(
        `${name} (${props[name]}) applies only to scalingMode "provisioned" (given scalingMode "${props.scalingMode ?? 'maximum-concurrency'}"); remove ${name} or set scalingMode "provisioned"`,
      );
    }
  }
  const maxConcurrency = props.maxConcurrency ?? defaultMaxConcurrency(bound, problems);
  if (props.maxConcurrency !== undefined && !isToken(maxConcurrency)) {
    if (
      !Number.isInteger(maxConcurrency) ||
      maxConcurrency < ESM_MIN_CONCURRENCY ||
      maxConcurrency > ESM_MAX_CONCURRENCY
    ) {
      problems.push(
        `maxConcurrency (${maxConcurrency}) must be a whole number from ${ESM_MIN_CONCURRENCY} to ${ESM_MAX_CONCURRENCY} (the SQS event source limits); set a value in that range`,
      );
    }
    if (capacity && maxConcurrency > capacity.safeConcurrency) {
      problems.push(
        `maxConcurrency (${maxConcurrency}) exceeds the safe worker concurrency: ${capacity.explanation}; lower maxConcurrency or raise the binding capacity input`,
      );
    }
  }
  const reservedConcurrency = props.reservedConcurrency ?? maxConcurrency;
  const reservedInRange = range(
    'reservedConcurrency',
    props.reservedConcurrency,
    ESM_MIN_CONCURRENCY,
    MAX_RESERVED_CONCURRENCY,
  );
  if (
    reservedInRange &&
    !isToken(reservedConcurrency) &&
    !isToken(maxConcurrency) &&
    reservedConcurrency < maxConcurrency
  ) {
    problems.push(
      `maxConcurrency (${maxConcurrency}) must not exceed reservedConcurrency (${reservedConcurrency}), or Lambda throttles the poller; raise reservedConcurrency to at least ${maxConcurrency} or lower maxConcurrency`,
    );
  }
  return { maxConcurrency, reservedConcurrency };
}

/** The safe worker concurrency within the event source's limits; the minimum when it cannot be computed. */
function defaultMaxConcurrency(bound: CapacityBound, problems: string[]): number {
  const { capacity } = bound;
  if (!capacity) {
    if (bound.capacityTokens) {
      problems.push(
        'a capacity input is a deploy-time token, so maxConcurrency has no default; set maxConcurrency',
      );
    }
    return ESM_MIN_CONCURRENCY;
  }
  const maxConcurrency = Math.min(capacity.safeConcurrency, ESM_MAX_CONCURRENCY);
  if (maxConcurrency < ESM_MIN_CONCURRENCY) {
    problems.push(
      `the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}), below the event source minimum of ${ESM_MIN_CONCURRENCY}; ${bound.capacityFix}`,
    );
  }
  return maxConcurrency;
}

/**
 * Mode `provisioned`: the pollers and the reserved concurrency from the capacity formula. One poller drives up
 * to {@link INVOKES_PER_POLLER} concurrent invokes, so `maximumPollers` defaults to ⌊safe concurrency / 10⌋
 * (at most 2000) and the reserved concurrency to `maximumPollers` × 10. The reserved concurrency stays the hard
 * cap on the database: it must not exceed the safe concurrency, and it must carry what the maximum of pollers
 * can drive, or Lambda throttles the pollers' invokes (each throttled batch is a receive, on its way to the
 * DLQ). A safe concurrency below 2 × 10 cannot carry the minimum of 2 pollers: refused.
 *
 * @internal
 */
export function resolveProvisioned(
  props: Omit<WorkerSettings, 'vpc'>,
  capacity: CapacityResult | undefined,
  capacityTokens: boolean,
  problems: string[],
  raiseCapacity: string,
): { provisionedPollers: ProvisionedPollers; reservedConcurrency: number } {
  const minimumNeeded = MIN_POLLERS * INVOKES_PER_POLLER;
  if (props.maxConcurrency !== undefined) {
    problems.push(
      `maxConcurrency (${props.maxConcurrency}) cannot be used with scalingMode "provisioned": the event source's MaximumConcurrency and ProvisionedPollerConfig are mutually exclusive; remove maxConcurrency (reservedConcurrency caps a provisioned worker) or set scalingMode "maximum-concurrency"`,
    );
  }
  const check = (name: string, value: number | undefined, min: number, max: number): boolean => {
    if (value === undefined || isToken(value)) return true;
    if (Number.isInteger(value) && value >= min && value <= max) return true;
    problems.push(
      `${name} (${value}) must be a whole number from ${min} to ${max} (the SQS event source limits); set a value in that range`,
    );
    return false;
  };
  check('minimumPollers', props.minimumPollers, MIN_POLLERS, MAX_MINIMUM_POLLERS);
  check('maximumPollers', props.maximumPollers, MIN_POLLERS, MAX_MAXIMUM_POLLERS);

  let maximumPollers = props.maximumPollers;
  if (maximumPollers === undefined) {
    if (capacity) {
      maximumPollers = Math.min(
        MAX_MAXIMUM_POLLERS,
        Math.floor(capacity.safeConcurrency / INVOKES_PER_POLLER),
      );
      if (maximumPollers < MIN_POLLERS) {
        problems.push(
          `scalingMode "provisioned" needs a safe worker concurrency of at least ${minimumNeeded} (${MIN_POLLERS} pollers, the minimum, × ${INVOKES_PER_POLLER} concurrent invokes each), but the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}); use scalingMode "maximum-concurrency" or ${raiseCapacity}`,
        );
        maximumPollers = MIN_POLLERS;
      }
    } else {
      if (capacityTokens) {
        problems.push(
          'a capacity input is a deploy-time token, so maximumPollers has no default; set maximumPollers and reservedConcurrency',
        );
      }
      maximumPollers = MIN_POLLERS;
    }
  } else if (
    capacity &&
    !isToken(maximumPollers) &&
    maximumPollers * INVOKES_PER_POLLER > capacity.safeConcurrency
  ) {
    problems.push(
      `maximumPollers (${maximumPollers}) can drive ${maximumPollers * INVOKES_PER_POLLER} concurrent invokes, above the safe worker concurrency: ${capacity.explanation}; lower maximumPollers to ${Math.floor(capacity.safeConcurrency / INVOKES_PER_POLLER)} or less, or ${raiseCapacity}`,
    );
  }
  const minimumPollers = props.minimumPollers ?? MIN_POLLERS;
  if (!isToken(minimumPollers) && !isToken(maximumPollers) && minimumPollers > maximumPollers) {
    problems.push(
      `minimumPollers (${minimumPollers}) must not exceed maximumPollers (${maximumPollers}); lower minimumPollers or raise maximumPollers`,
    );
  }

  const reservedConcurrency = props.reservedConcurrency ?? maximumPollers * INVOKES_PER_POLLER;
  if (props.reservedConcurrency !== undefined && !isToken(props.reservedConcurrency)) {
    const given = props.reservedConcurrency;
    if (!Number.isInteger(given) || given < ESM_MIN_CONCURRENCY || given > MAX_RESERVED_CONCURRENCY) {
      problems.push(
        `reservedConcurrency (${given}) must be a whole number from ${ESM_MIN_CONCURRENCY} to ${MAX_RESERVED_CONCURRENCY}; set a value in that range`,
      );
    } else {
      if (capacity && given > capacity.safeConcurrency) {
        problems.push(
          `reservedConcurrency (${given}) exceeds the safe worker concurrency: ${capacity.explanation}; with scalingMode "provisioned" the reserved concurrency is the only cap on the database, so lower reservedConcurrency or ${raiseCapacity}`,
        );
      }
      if (!isToken(maximumPollers) && given < maximumPollers * INVOKES_PER_POLLER) {
        problems.push(
          `reservedConcurrency (${given}) is below what maximumPollers (${maximumPollers}) can drive (${maximumPollers * INVOKES_PER_POLLER} concurrent invokes), so Lambda would throttle the pollers and every throttled batch counts as a receive toward the DLQ; raise reservedConcurrency to ${maximumPollers * INVOKES_PER_POLLER} or lower maximumPollers to ${Math.floor(given / INVOKES_PER_POLLER)}`,
        );
      }
    }
  }
  return { provisionedPollers: { minimumPollers, maximumPollers }, reservedConcurrency };
}
