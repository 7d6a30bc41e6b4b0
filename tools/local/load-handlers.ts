import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoMessageHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { HandlersModuleError } from './errors.ts';

/** The store a local run uses (`npm start -- --store`). */
export type HandlersStore = 'postgres' | 'dynamodb';

/** What {@link loadHandlers} found. */
export interface LoadedHandlers {
  /** Absolute path of the module. */
  readonly file: string;
  /**
   * Its `handlers` export, checked to be a non-empty list of `defineHandler(...)` results (`defineDynamoHandler(...)`
   * with the DynamoDB store).
   */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly (MessageHandler<any> | DynamoMessageHandler<any>)[];
}

/** What each store's handlers are, how they are made, and the `npm start` flags that run them. */
const KINDS: Readonly<Record<HandlersStore, { what: string; define: string; run: string }>> = {
  postgres: {
    what: 'PostgreSQL handlers (defineHandler, createWorkerFromConfig from sqs-inbox-worker/postgres)',
    define: 'defineHandler from sqs-inbox-worker',
    run: 'without --store (or with --store postgres)',
  },
  dynamodb: {
    what: 'DynamoDB handlers (defineDynamoHandler, createDynamoWorkerFromConfig from sqs-inbox-worker/dynamodb)',
    define: 'defineDynamoHandler from sqs-inbox-worker/dynamodb (docs/dynamodb.md)',
    run: 'with --store dynamodb',
  },
};
const flag = (store: HandlersStore) =>
  store === 'dynamodb' ? '--store dynamodb' : '--store postgres (the default)';

/** The error of a module whose handlers are of `found`'s store, run with `store`'s: names both fixes. */
function kindMismatch(path: string, store: HandlersStore, found: HandlersStore, cause?: unknown) {
  return new HandlersModuleError(
    path,
    `--handlers ${path}: the module's handlers are ${KINDS[found].what}, and ${flag(store)} runs ${KINDS[store].what.split(' (')[0]}: run it ${KINDS[found].run}, or define its handlers with ${KINDS[store].define}.`,
    cause === undefined ? undefined : { cause },
  );
}

const FIX =
  'export your handlers from it: `export const handlers = [myHandler];` (see README.md, "A first handler")';

const isHandler = (value: unknown): value is MessageHandler =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as MessageHandler).messageType === 'string' &&
  typeof (value as MessageHandler).schemaVersion === 'number' &&
  typeof (value as MessageHandler).handle === 'function';

/**
 * Checks that `path` (relative to `cwd`) names an existing file, without loading it: `npm start -- --handlers`
 * calls it before it starts PostgreSQL, so a typo fails at once.
 *
 * @throws HandlersModuleError naming the path, where it was looked for, and the fix.
 */
export function resolveHandlersPath(path: string, cwd: string = process.cwd()): string {
  const file = resolve(cwd, path);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new HandlersModuleError(
      path,
      `--handlers ${path}: no such file (looked for ${file}). Give the path of a TypeScript or JavaScript module, relative to ${cwd}, and ${FIX}.`,
    );
  }
  return file;
}

/**
 * Loads the module of `npm start -- --handlers <path>` and returns its `handlers` export: a non-empty list of
 * `defineHandler(...)` results, the list the module's own `createWorkerFromConfig({ handlers })` deploys — or, with
 * `store` `dynamodb`, of `defineDynamoHandler(...)` results (`createDynamoWorkerFromConfig`). Handlers of the other
 * store are refused, naming both fixes; so is a module whose top level refuses the store's environment (its
 * `createWorkerFromConfig` under `WORKER_STORE=dynamodb`, or the other way round).
 * The module is imported as is (under `npm start`, TypeScript runs through tsx), so code at its top level runs:
 * set the environment it reads (`DATABASE_URL`, `SQS_ENDPOINT`) first.
 *
 * @throws HandlersModuleError when the file is missing, fails to load, or has no usable `handlers` export; the
 * message names the path and the fix.
 */
export async function loadHandlers(
  path: string,
  cwd: string = process.cwd(),
  store: HandlersStore = 'postgres',
): Promise<LoadedHandlers> {
  const file = resolveHandlersPath(path, cwd);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    // The worker factory of the other store, called at the module's top level, refuses this store's variables.
    const message = error instanceof Error ? error.message : '';
    if (/^WORKER_STORE is "dynamodb", but createWorkerFromConfig/.test(message))
      throw kindMismatch(path, store, 'postgres', error);
    if (/^WORKER_STORE is not "dynamodb"/.test(message)) throw kindMismatch(path, store, 'dynamodb', error);
    // One line: a ConfigError lists its problems on lines of their own.
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ');
    throw new HandlersModuleError(path, `--handlers ${path}: the module failed to load: ${reason}`, {
      cause: error,
    });
  }
  const handlers = module.handlers;
  if (handlers === undefined) {
    const names = Object.keys(module).filter((name) => name !== 'default');
    throw new HandlersModuleError(
      path,
      `--handlers ${path}: the module has no \`handlers\` export (it exports ${names.length ? names.join(', ') : 'nothing'}); ${FIX}.`,
    );
  }
  if (!Array.isArray(handlers) || handlers.length === 0 || !handlers.every(isHandler)) {
    const given = Array.isArray(handlers) ? `a list of ${handlers.length}` : typeof handlers;
    throw new HandlersModuleError(
      path,
      `--handlers ${path}: \`handlers\` must be a non-empty list of defineHandler({ messageType, schemaVersion, payload, handle }) results (given ${given}); ${FIX}.`,
    );
  }
  const other = store === 'dynamodb' ? 'postgres' : 'dynamodb';
  const kindOf = (handler: MessageHandler): HandlersStore =>
    (handler as { store?: string }).store === 'dynamodb' ? 'dynamodb' : 'postgres';
  if (handlers.some((handler) => kindOf(handler) === other)) throw kindMismatch(path, store, other);
  return { file, handlers };
}
