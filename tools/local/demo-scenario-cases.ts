import { buildDemoMessages } from './demo-messages.ts';
import { addPayloadRefCases, type DemoDocuments } from './demo-scenario-payload-refs.ts';

/**
 * The PostgreSQL demo's messages and what its checks look for: the messages every store sends, its two locked
 * cases, and (with documents) the payloadRef cases.
 *
 * @internal
 */
export type PostgresScenario = ReturnType<typeof buildPostgresScenario>;

/**
 * Builds the PostgreSQL demo's messages; all ids are prefixed with `runId` so runs never collide.
 *
 * @internal
 */
export function buildPostgresScenario(runId: string, count: number, documents?: DemoDocuments) {
  // Deadline requests take the producer path: outbox row in the producer's transaction, then the relay.
  const { add, stage, ...demo } = buildDemoMessages(runId, count, {
    accountId: (index) => `acct-${index % 7}`,
    deadlinesViaOutbox: true,
  });
  const lockedCase = `${runId}-case-locked`;
  const stuckCase = `${runId}-case-stuck`;
  // Retryable: the case row is locked by another transaction; released after two failed attempts.
  add('retryable-then-succeeds', stage(lockedCase, 2, 'REVIEW'));
  // Never recovers: its case stays locked until SQS has moved it to the DLQ.
  add('never-recovers', stage(stuckCase, 2, 'REVIEW'));
  const bigPaymentId = `${runId}-payment-big`;
  if (documents) addPayloadRefCases(add, runId, documents, bigPaymentId);

  return {
    messages: demo.messages,
    caseIds: [...demo.caseIds, lockedCase, stuckCase],
    lockedKey: `${lockedCase}:stage:v2`,
    stuckKey: `${stuckCase}:stage:v2`,
    lockedCase,
    stuckCase,
    outOfOrder: demo.outOfOrder,
    phase2After: demo.phase2After,
    crashBodies: demo.crashBodies,
    paymentIds: [
      ...Array.from({ length: demo.paymentCount }, (_, i) => `${runId}-payment-${i + 1}`),
      ...(documents ? [bigPaymentId] : []),
    ],
  };
}
