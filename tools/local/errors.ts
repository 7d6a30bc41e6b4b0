/** Errors of the local stack (`npm start`). */

/**
 * Thrown by `startLocalStack` when a service it was given cannot be used: the PostgreSQL of `DATABASE_URL` or
 * the SQS endpoint of `SQS_ENDPOINT`. The message is one line naming the variable to fix; the original error is
 * the `cause`.
 */
export class LocalStackError extends Error {
  /** The environment variable to fix. */
  readonly setting: 'DATABASE_URL' | 'SQS_ENDPOINT';
  constructor(setting: 'DATABASE_URL' | 'SQS_ENDPOINT', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalStackError';
    this.setting = setting;
  }
}
