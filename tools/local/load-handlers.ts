import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { HandlersModuleError } from './errors.ts';

/** What {@link loadHandlers} found. */
export interface LoadedHandlers {
  /** Absolute path of the module. */
  readonly file: string;
  /** Its `handlers` export, checked to be a non-empty list of `defineHandler(...)` results. */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly MessageHandler<any>[];
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
 * `defineHandler(...)` results, the list the module's own `createWorkerFromConfig({ handlers })` deploys.
 * The module is imported as is (under `npm start`, TypeScript runs through tsx), so code at its top level runs:
 * set the environment it reads (`DATABASE_URL`, `SQS_ENDPOINT`) first.
 *
 * @throws HandlersModuleError when the file is missing, fails to load, or has no usable `handlers` export; the
 * message names the path and the fix.
 */
export async function loadHandlers(path: string, cwd: string = process.cwd()): Promise<LoadedHandlers> {
  const file = resolveHandlersPath(path, cwd);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
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
  return { file, handlers };
}
