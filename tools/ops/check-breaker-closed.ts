import { type EventSourceMappingClient, readMapping } from '../../lambda/breaker/mapping-control.ts';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';

/** Where the breaker check stands, decided by the caller from the stage and the environment. */
export type BreakerTarget =
  | { readonly kind: 'skip'; readonly reason: string }
  | {
      readonly kind: 'mapping';
      readonly mappingUuid: string | undefined;
      readonly lambda: EventSourceMappingClient;
    };

/**
 * "The breaker is closed": the worker's event source mapping read the way `sqs-worker breaker status` reads it
 * (GetEventSourceMapping, ListTags): enabled and not held open by an operator. SKIP where there is no mapping to read
 * (the Fargate runtime, the local stack's mapping inside `npm start`).
 *
 * @internal
 */
export async function checkBreakerClosed(target: BreakerTarget): Promise<SmokeCheck> {
  const name = SMOKE_CHECKS.breaker;
  if (target.kind === 'skip') return skip(name, target.reason);
  if (!target.mappingUuid) {
    return fail(
      name,
      'no event source mapping UUID: the stack output EventSourceMappingUuid was not found; pass --mapping-uuid',
    );
  }
  try {
    const mapping = await readMapping(target.lambda, target.mappingUuid);
    if (mapping.hold !== undefined) {
      return fail(
        name,
        `open, held by an operator (${mapping.hold}); release it with sqs-worker breaker close once the database is fine`,
      );
    }
    if (!mapping.enabled) {
      return fail(
        name,
        `open: mapping ${mapping.uuid} is ${mapping.state}, the worker receives nothing (sqs-worker breaker status; the breaker function closes it when its probe succeeds)`,
      );
    }
    return pass(
      name,
      `mapping ${mapping.state}${mapping.maxConcurrency ? `, MaximumConcurrency ${mapping.maxConcurrency}` : ''}`,
    );
  } catch (error) {
    return fail(
      name,
      `GetEventSourceMapping ${target.mappingUuid} failed: ${(error as Error).name}: ${(error as Error).message} (the operator needs lambda:GetEventSourceMapping and lambda:ListTags)`,
    );
  }
}
