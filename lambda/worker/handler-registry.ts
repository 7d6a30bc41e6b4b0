import { ConfigError } from '../errors.ts';
import type { RoutedHandler } from './routed-handler.ts';

/**
 * Domain handlers indexed by messageType and schemaVersion.
 *
 * @internal
 */
export interface HandlerRegistry {
  /** The handler for a type and version, if one is registered. */
  find(messageType: string, schemaVersion: number): RoutedHandler | undefined;
  /** Versions registered for a type (empty for an unknown type). */
  versions(messageType: string): readonly number[];
}

/**
 * Indexes handlers by `messageType` and `schemaVersion`.
 *
 * @throws ConfigError when the list is empty or two handlers claim the same type and version.
 *
 * @internal
 */
export function createHandlerRegistry(handlers: readonly RoutedHandler[]): HandlerRegistry {
  if (handlers.length === 0) throw new ConfigError('createWorker needs at least one handler (given none)');
  const byType = new Map<string, Map<number, RoutedHandler>>();
  for (const handler of handlers) {
    const versions = byType.get(handler.messageType) ?? new Map<number, RoutedHandler>();
    if (versions.has(handler.schemaVersion)) {
      throw new ConfigError(
        `Two handlers are registered for ${handler.messageType} schemaVersion ${handler.schemaVersion}; keep one`,
      );
    }
    versions.set(handler.schemaVersion, handler);
    byType.set(handler.messageType, versions);
  }
  return {
    find: (messageType, schemaVersion) => byType.get(messageType)?.get(schemaVersion),
    versions: (messageType) => [...(byType.get(messageType)?.keys() ?? [])].sort((a, b) => a - b),
  };
}
