import type { WorkerConfig } from '../config.ts';

/** A store as a worker's configuration wires it ({@link StoreWiring}). @internal */
export interface WiredStore<Part> {
  readonly store: WorkerConfig['store']['kind'];
  /** What the engine's options get of the store: `{ sql }` for PostgreSQL, `{ store }` for DynamoDB. */
  readonly part: Part;
  /**
   * Resolves when the store answers the way the engine reaches it, within the probe timeout (the poller's pause):
   * PostgreSQL `select 1` on a pool of one of its own; DynamoDB one GetItem through the store's client. Nothing is
   * connected before the first probe.
   */
  probe(): Promise<void>;
  /** Closes what the store holds: the pool and the probe's (`graceful` waits up to 5 s), or the DynamoDB client. */
  close(mode: 'graceful' | 'now'): Promise<void>;
}

/**
 * Wires a store from a worker's configuration, for `engineFromConfig`: one per store (`postgresWiring`,
 * `dynamoWiring`), so that a runtime's entry names the store it bundles.
 *
 * @internal
 */
export type StoreWiring<Part> = (
  config: WorkerConfig,
  options: { readonly probeTimeoutMs: number },
) => WiredStore<Part>;
