import type { BatchClaims } from './batch-claims.ts';
import type { PostgresCompleter, TransactionRunner } from './postgres-completer.ts';

/**
 * The per-batch completer: records run in the batch transaction through `runner` (the transaction itself, or a
 * savepoint per record), their bookkeeping too; a record whose row the batch claimed in one statement
 * (`batch-claims.ts`) takes that claim — durable: it survives the record's rolled-back savepoint — and is marked
 * COMPLETED with the rest of the batch at its end (`BatchClaims.finish`). A record left out of the batch claim claims
 * and completes as `inline` does.
 *
 * @internal
 */
export function batchCompleter(
  runner: TransactionRunner,
  claims: BatchClaims | undefined,
  inline: PostgresCompleter,
): PostgresCompleter {
  return {
    transaction: runner,
    bookkeeping: runner,
    async claim(tx, entry) {
      const taken = claims?.take(entry.sqsMessageId);
      return taken ? { claim: taken, durable: true } : inline.claim(tx, entry);
    },
    async complete(tx, entry, claimed, resultRef) {
      if (claimed.durable) claims?.complete(entry.envelope.idempotencyKey, resultRef);
      else await inline.complete(tx, entry, claimed, resultRef);
    },
  };
}
