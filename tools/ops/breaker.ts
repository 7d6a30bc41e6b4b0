import { UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import {
  type EventSourceMappingClient,
  holdMapping,
  type MappingSnapshot,
  readMapping,
  releaseMapping,
} from '../../lambda/breaker/mapping-control.ts';
import type { Clock } from './clock.ts';
import type { OpsOutput } from './output.ts';
import { emit, recordTable } from './output.ts';

/** Collaborators of the `breaker` commands. */
export interface BreakerDeps {
  /** Lambda control plane (a `LambdaClient`; a recorded fake in tests). */
  readonly lambda: EventSourceMappingClient;
  readonly out: OpsOutput;
  readonly clock: Clock;
}

/** What `breaker status|open|close` print (`--json`). */
export interface BreakerStatusResult {
  readonly mappingUuid: string;
  /** Lambda's `State`: Enabled, Disabled, Enabling, Disabling, Updating. */
  readonly state: string;
  /** `open (held)`, `open` (disabled by the breaker or by hand) or `closed` (polling). */
  readonly breaker: 'open (held)' | 'open' | 'closed';
  readonly hold: string | null;
  readonly maxConcurrency: number | null;
  readonly pollers: string | null;
  readonly lastModified: string;
}

/** Tag values allow letters, digits, spaces and `_ . : / = + - @` only. */
const tagSafe = (text: string) => text.replace(/[^\p{L}\p{N} _.:/=+\-@]/gu, '_').slice(0, 200);

function describe(mapping: MappingSnapshot): BreakerStatusResult {
  return {
    mappingUuid: mapping.uuid,
    state: mapping.state,
    breaker: mapping.hold !== undefined ? 'open (held)' : mapping.enabled ? 'closed' : 'open',
    hold: mapping.hold ?? null,
    maxConcurrency: mapping.maxConcurrency ?? null,
    pollers: mapping.pollers ? `${mapping.pollers.minimum ?? '-'}–${mapping.pollers.maximum ?? '-'}` : null,
    lastModified: new Date(mapping.lastModified).toISOString(),
  };
}

function print(out: OpsOutput, result: BreakerStatusResult): BreakerStatusResult {
  emit(out, result, () => recordTable({ ...result }));
  return result;
}

/**
 * `breaker status`: the worker's event source mapping as the breaker sees it: enabled or not, the operator's
 * hold, the scaling, and when it last changed. Reads only (GetEventSourceMapping, ListTags).
 */
export async function breakerStatus(
  deps: BreakerDeps,
  options: { mappingUuid: string },
): Promise<BreakerStatusResult> {
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid)));
}

/**
 * `breaker open`: holds the breaker open: tags the mapping with the hold (who, when, why), then disables it.
 * The breaker function sees the hold on its next tick and never enables the mapping while it is there. Works
 * while the database is down: nothing is written to it.
 */
export async function breakerOpen(
  deps: BreakerDeps,
  options: { mappingUuid: string; operator: string; reason?: string },
): Promise<BreakerStatusResult> {
  const mapping = await readMapping(deps.lambda, options.mappingUuid);
  const hold = tagSafe(
    `held by ${options.operator} at ${deps.clock.now().toISOString()}${options.reason ? `: ${options.reason}` : ''}`,
  );
  await holdMapping(deps.lambda, mapping.arn, hold);
  await deps.lambda.send(new UpdateEventSourceMappingCommand({ UUID: options.mappingUuid, Enabled: false }));
  deps.out.note(
    `Mapping ${options.mappingUuid} disabled and held open; "sqs-worker breaker close" releases it.`,
  );
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid)));
}

/**
 * `breaker close`: releases the hold and enables the mapping. The breaker function stays in charge: it restores
 * the configured scaling on its next tick, and opens again if the database is still unavailable.
 */
export async function breakerClose(
  deps: BreakerDeps,
  options: { mappingUuid: string },
): Promise<BreakerStatusResult> {
  const mapping = await readMapping(deps.lambda, options.mappingUuid);
  if (mapping.hold !== undefined) await releaseMapping(deps.lambda, mapping.arn);
  await deps.lambda.send(new UpdateEventSourceMappingCommand({ UUID: options.mappingUuid, Enabled: true }));
  deps.out.note(
    `Mapping ${options.mappingUuid} enabled${mapping.hold !== undefined ? ', hold released' : ''}.`,
  );
  return print(deps.out, describe(await readMapping(deps.lambda, options.mappingUuid)));
}
