import type { Logger } from '@aws-lambda-powertools/logger';

/**
 * Returns a function that gives the client of `source` — the client itself, or a function that makes it on first
 * use — making it once. A source that fails is logged as `event` and resolves to `undefined`, so the caller goes
 * on without the client; the next call tries again.
 *
 * @internal
 */
export function lazyClientResolver<T extends object>(
  source: T | (() => Promise<T>) | undefined,
  logger: Pick<Logger, 'warn'>,
  event: string,
): () => Promise<T | undefined> {
  if (source === undefined || typeof source !== 'function') return () => Promise.resolve(source);
  const make = source as () => Promise<T>;
  let client: Promise<T> | undefined;
  return () => {
    client ??= make();
    return client.catch((error: unknown) => {
      client = undefined;
      logger.warn(event, { error: String(error) });
      return undefined;
    });
  };
}
