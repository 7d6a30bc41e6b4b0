import { POLLER_DEFAULTS } from '../lambda/runtimes/poller/constants.ts';
import { CONCURRENCY_FLOOR } from './jobs/breaker-function.ts';
import type { ScalingMode } from './resolve-worker-settings.ts';
import { ESM_MAX_CONCURRENCY, ESM_MIN_CONCURRENCY, isToken } from './setting-checks.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The adaptive limit of the records in flight after defaults. */
export interface AdaptiveConcurrencyResolved {
  /**
   * The lowest the limit goes: the mapping's `MaximumConcurrency` (runtime `lambda`, `CONCURRENCY_FLOOR`), or one
   * task's records in flight (runtime `fargate`, `POLLER_CONCURRENCY_FLOOR`).
   */
  readonly floor: number;
}

/** What decides whether a loop can run, and its ceiling. */
interface AdaptiveInputs {
  readonly fargate: boolean;
  /** Whether the breaker is deployed (runtime `lambda`): its control loop moves the mapping's limit. */
  readonly breaker: boolean;
  readonly scalingMode: ScalingMode;
  /** The mapping's `MaximumConcurrency`: the ceiling on Lambda. */
  readonly maxConcurrency: number;
  /** `POLLER_CONCURRENCY`: the ceiling on Fargate. */
  readonly recordConcurrency: number;
}

/**
 * `adaptiveConcurrency` and `concurrencyFloor` after defaults; undefined when no limit moves: `adaptiveConcurrency`
 * false, or on Lambda without a loop to run (no breaker, or a provisioned mapping, which has no
 * `MaximumConcurrency`). Either prop given where no loop runs is refused rather than ignored, and so is a floor with
 * the loop turned off. The floor is within its runtime's range and at most its ceiling: `maxConcurrency` on Lambda
 * (AWS's 2 to 1000), the poller's `recordConcurrency` on Fargate (from 1). Tokens are not checked.
 *
 * @internal
 */
export function resolveAdaptiveConcurrency(
  props: Pick<
    WorkerSettings,
    'adaptiveConcurrency' | 'concurrencyFloor' | 'maxConcurrency' | 'recordConcurrency'
  >,
  inputs: AdaptiveInputs,
  problems: string[],
): AdaptiveConcurrencyResolved | undefined {
  const { adaptiveConcurrency, concurrencyFloor } = props;
  if (adaptiveConcurrency === false) {
    if (concurrencyFloor !== undefined) {
      problems.push(
        `concurrencyFloor (${concurrencyFloor}) is set while adaptiveConcurrency is false: no limit moves, so none has a floor; remove concurrencyFloor or remove adaptiveConcurrency: false`,
      );
    }
    return undefined;
  }
  if (inputs.fargate) return { floor: pollerFloor(props, inputs.recordConcurrency, problems) };
  const noLoop = noLoopProblem(inputs);
  if (noLoop) {
    for (const name of ['adaptiveConcurrency', 'concurrencyFloor'] as const) {
      if (props[name] !== undefined) problems.push(noLoop(name, props[name]));
    }
    return undefined;
  }
  return { floor: mappingFloor(props, inputs.maxConcurrency, problems) };
}

/** Why a Lambda worker runs no control loop, as the problem of a prop that asks for one; undefined when it runs one. */
function noLoopProblem(
  inputs: AdaptiveInputs,
): ((name: string, value: boolean | number) => string) | undefined {
  if (!inputs.breaker) {
    return (name, value) =>
      `${name} (${value}) needs the breaker, whose control loop moves the event source mapping's MaximumConcurrency, and breaker is false; remove ${name} or remove breaker: false`;
  }
  if (inputs.scalingMode === 'provisioned') {
    return (name, value) =>
      `${name} (${value}) applies only to scalingMode "maximum-concurrency": the breaker's control loop moves the event source mapping's MaximumConcurrency, which a provisioned mapping does not have (given scalingMode "provisioned"); remove ${name} or set scalingMode "maximum-concurrency"`;
  }
  return undefined;
}

/** `CONCURRENCY_FLOOR`: AWS's range of `MaximumConcurrency`, at most the mapping's `maxConcurrency`. */
function mappingFloor(
  props: Pick<WorkerSettings, 'concurrencyFloor' | 'maxConcurrency'>,
  maxConcurrency: number,
  problems: string[],
): number {
  const floor = props.concurrencyFloor ?? CONCURRENCY_FLOOR;
  if (props.concurrencyFloor === undefined || isToken(floor)) return floor;
  if (!Number.isInteger(floor) || floor < ESM_MIN_CONCURRENCY || floor > ESM_MAX_CONCURRENCY) {
    problems.push(
      `concurrencyFloor (${floor}) must be a whole number from ${ESM_MIN_CONCURRENCY} to ${ESM_MAX_CONCURRENCY} with runtime "lambda" (the SQS event source's MaximumConcurrency limits: AWS refuses less than ${ESM_MIN_CONCURRENCY}); set a value in that range`,
    );
  } else if (!isToken(maxConcurrency) && maxConcurrency >= ESM_MIN_CONCURRENCY && floor > maxConcurrency) {
    const derived = props.maxConcurrency === undefined;
    problems.push(
      `concurrencyFloor (${floor}) must not exceed maxConcurrency (${maxConcurrency}${derived ? ', from the capacity formula' : ''}): the breaker's control loop moves the mapping's MaximumConcurrency between the two; lower concurrencyFloor${derived ? ' or raise the binding capacity input' : ' or raise maxConcurrency'}`,
    );
  }
  return floor;
}

/** `POLLER_CONCURRENCY_FLOOR`: from 1, at most the poller's `recordConcurrency` (`POLLER_CONCURRENCY`). */
function pollerFloor(
  props: Pick<WorkerSettings, 'concurrencyFloor' | 'recordConcurrency'>,
  recordConcurrency: number,
  problems: string[],
): number {
  const floor = props.concurrencyFloor ?? POLLER_DEFAULTS.concurrencyFloor;
  if (props.concurrencyFloor === undefined || isToken(floor)) return floor;
  const ceiling = isToken(recordConcurrency) ? undefined : recordConcurrency;
  if (!Number.isInteger(floor) || floor < 1) {
    problems.push(
      `concurrencyFloor (${floor}) must be a whole number of at least 1 with runtime "fargate" (POLLER_CONCURRENCY_FLOOR: the fewest records one task keeps in flight); set a value from 1 to recordConcurrency${ceiling === undefined ? '' : ` (${ceiling})`}`,
    );
  } else if (ceiling !== undefined && Number.isInteger(ceiling) && ceiling >= 1 && floor > ceiling) {
    const derived = props.recordConcurrency === undefined ? ', its default' : '';
    problems.push(
      `concurrencyFloor (${floor}) must not exceed the poller's concurrency (recordConcurrency ${ceiling}${derived}, POLLER_CONCURRENCY): its adaptive limit moves the records in flight between the two; lower concurrencyFloor or raise recordConcurrency`,
    );
  }
  return floor;
}
