/** Errors of the local stack (`npm start`). */

/**
 * Thrown by `startLocalStack` when a service it was given cannot be used: the PostgreSQL of `DATABASE_URL` or
 * the SQS endpoint of `SQS_ENDPOINT`. The message is one line naming the variable to fix; the original error is
 * the `cause`.
 */
export class LocalStackError extends Error {
  /** The environment variable to fix. */
  readonly setting: 'DATABASE_URL' | 'SQS_ENDPOINT' | 'AWS_ENDPOINT_URL_SQS' | 'AWS_ENDPOINT_URL';
  constructor(setting: LocalStackError['setting'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalStackError';
    this.setting = setting;
  }
}

/**
 * Thrown by `loadHandlers` when the module given to `npm start -- --handlers <file>` cannot be used: the file is
 * missing, fails to load, or does not export a `handlers` list. The message names the path and the fix.
 */
export class HandlersModuleError extends Error {
  /** The path as the user gave it. */
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HandlersModuleError';
    this.path = path;
  }
}
