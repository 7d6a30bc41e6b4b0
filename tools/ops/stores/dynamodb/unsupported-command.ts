import { UsageError } from '../../errors.ts';

/** What to use instead of each command the DynamoDB store cannot do. */
const DYNAMODB_ALTERNATIVES: Readonly<Record<string, string>> = {
  'inbox purge':
    'The DynamoDB store needs no purge: inbox items expire by TTL (retention + 1 day, docs/dynamodb.md "TTL retention").',
};

/**
 * The commands the DynamoDB store has no use for.
 *
 * @internal
 */
export const UNSUPPORTED_COMMANDS: readonly string[] = Object.keys(DYNAMODB_ALTERNATIVES);

/**
 * The refusal of a command the DynamoDB store has no use for (`inbox purge`: TTL removes settled items), given when the store setting (`--store` / `WORKER_STORE`) is `dynamodb`: it names the
 * command, the store and what to use instead (exit 2), before anything is read or sent.
 *
 * @internal
 */
export function unsupportedCommand(command: string): UsageError {
  return new UsageError(
    `"sqs-worker ${command}" reads the PostgreSQL store and is not available with --store dynamodb / ` +
      `WORKER_STORE=dynamodb. ${DYNAMODB_ALTERNATIVES[command] ?? 'With the DynamoDB store use "inbox show|stats" and "quarantine list|show|release" with --store dynamodb.'} ` +
      'If this worker uses PostgreSQL, pass --store postgres or unset WORKER_STORE.',
  );
}
