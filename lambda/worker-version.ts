/**
 * The version of the worker code that handled a record, for deploy correlation: it is on every record's log line
 * (`workerVersion`), on each failed attempt the inbox keeps, on quarantine entries and in `sqs-worker queue status`,
 * so an operator can tell "this started with the deploy at 14:02" from a producer's change.
 *
 * The construct sets `WORKER_VERSION` to the hash of the code it deploys (the Lambda code asset, the poller's image
 * asset), which changes with every deploy that changes the code. Without it: Lambda's `AWS_LAMBDA_FUNCTION_NAME` and
 * `AWS_LAMBDA_FUNCTION_VERSION` (`case-worker:$LATEST`, or a published version's number), else `unversioned`.
 * A leaf module: `config.ts` calls it once with the environment.
 */

/** Longest version kept (the inbox and quarantine columns hold 64 characters). */
export const MAX_WORKER_VERSION_LENGTH = 64;

/** The version when nothing names one. */
export const UNVERSIONED = 'unversioned';

/**
 * The worker version of an environment: `WORKER_VERSION`, else `<function name>:<function version>` on Lambda, else
 * {@link UNVERSIONED}; cut to {@link MAX_WORKER_VERSION_LENGTH} characters.
 *
 * @example
 * workerVersion({ WORKER_VERSION: '3f9c2a1b7d4e' }); // '3f9c2a1b7d4e'
 * workerVersion({ AWS_LAMBDA_FUNCTION_NAME: 'case-worker', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' }); // 'case-worker:$LATEST'
 */
export function workerVersion(env: Readonly<Record<string, string | undefined>>): string {
  const given = env.WORKER_VERSION?.trim();
  if (given) return given.slice(0, MAX_WORKER_VERSION_LENGTH);
  const name = env.AWS_LAMBDA_FUNCTION_NAME;
  if (name)
    return `${name}:${env.AWS_LAMBDA_FUNCTION_VERSION ?? '$LATEST'}`.slice(0, MAX_WORKER_VERSION_LENGTH);
  return UNVERSIONED;
}
