import type { CommitStrategy, EngineSettings } from './commit-strategy.ts';
import type { RoutedHandler } from './routed-handler.ts';

/**
 * A store as the engine sees it: the seam where a store plugs in. The engine (`batch-engine.ts`) owns everything
 * store-free, the decision tree of a record included (`process-record.ts`), and asks the store three things: what it
 * refuses of the options, which canary handler it registers, and the commit strategy that runs and commits each batch
 * (`commit-strategy.ts` states that contract) with the store's record primitives (`record-store.ts`). The PostgreSQL
 * store is `postgresStore` (`lambda/stores/postgres/postgres-store.ts`), the DynamoDB store `createDynamoStore`
 * (`lambda/stores/dynamodb/dynamo-store.ts`); a third store is a folder under `lambda/stores/` with a function that
 * returns one of these — usually `inlineCommit` over its `RecordStore` — and passes the conformance suite
 * (`test/integration/store-acceptance.test.ts`).
 *
 * @internal
 */
export interface Store {
  /** The toolkit's canary handler on this store, registered in every worker (see `withCanaryHandler`). */
  readonly canaryHandler: RoutedHandler;
  /**
   * What is wrong with the engine's options on this store (the records it may run at once, …), each problem naming
   * the fix; empty when nothing is. The engine lists them with its own in one `ConfigError`.
   */
  problems(options: { readonly recordConcurrency: number }): string[];
  /** The engine's commit strategy on this store, made once per engine. */
  commitStrategy(settings: EngineSettings): CommitStrategy;
}
