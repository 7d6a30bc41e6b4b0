import type { DatabaseProbe } from '../breaker/create-database-probe.ts';
import { createSql } from '../postgres/db.ts';
import type { StoreWiring } from './store-wiring.ts';

/**
 * The PostgreSQL store from a worker's configuration: a postgres.js pool of `DB_POOL_SIZE` (`createSql`), and the
 * pause's probe on a pool of one of its own, made at the first probe (its code too: a Lambda worker, which never
 * probes, neither loads nor opens anything of it).
 * The callers pick it for the PostgreSQL store only (`createWorkerFromConfig` refuses `WORKER_STORE=dynamodb`, the
 * poller wires the store of `WORKER_STORE`).
 *
 * @internal
 */
export const postgresWiring: StoreWiring<{ readonly sql: ReturnType<typeof createSql> }> = (
  config,
  { probeTimeoutMs },
) => {
  const database = config.database;
  const sql = createSql(database, { applicationName: config.consumer });
  let probe: DatabaseProbe | undefined;
  return {
    store: 'postgres',
    part: { sql },
    async probe() {
      if (!probe) {
        const { createDatabaseProbe } = await import('../breaker/create-database-probe.ts');
        probe ??= createDatabaseProbe(
          () => createSql({ ...database, poolSize: 1 }, { applicationName: `${config.consumer}-probe` }),
          probeTimeoutMs,
        );
      }
      await probe();
    },
    async close(mode) {
      await Promise.all([sql.end({ timeout: mode === 'graceful' ? 5 : 0 }), probe?.close()]);
    },
  };
};
