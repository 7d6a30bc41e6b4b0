/**
 * Every failure code the toolkit (the engine, both stores, the effect log) and the example domain emit: what
 * `worker_inbox.failure_code`, `worker_quarantine.reason_code` (or the DynamoDB items' `failureCode`, `reasonCode`),
 * the logs and `terminalAfterCodes` can hold besides your own handlers' codes. The toolkit's lists are in
 * lambda/toolkit-failure-codes.ts, the example domain's in lambda/domain/failure-codes.ts.
 * docs/semantics.md (docs/dynamodb.md for the DynamoDB store's) explains them; a test checks that every code the
 * sources emit is listed here. Constants only.
 */
import { EXAMPLE_FAILURE_CODES } from './domain/failure-codes.ts';
import { TOOLKIT_FAILURE_CODES } from './toolkit-failure-codes.ts';

export {
  CANARY_FAILURE_CODES,
  DYNAMODB_FAILURE_CODES,
  EFFECT_FAILURE_CODES,
  ENGINE_FAILURE_CODES,
  TOOLKIT_FAILURE_CODES,
} from './toolkit-failure-codes.ts';
export { EXAMPLE_FAILURE_CODES };

/** Every code listed above. */
export const FAILURE_CODES = [...TOOLKIT_FAILURE_CODES, ...EXAMPLE_FAILURE_CODES] as const;

/** A failure code the toolkit or the example domain emits; `POSTGRES_<sqlstate>` for an unclassified SQLSTATE. */
export type FailureCode = (typeof FAILURE_CODES)[number] | `POSTGRES_${string}`;
