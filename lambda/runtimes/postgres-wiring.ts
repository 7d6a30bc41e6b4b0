import type { DatabaseProbe } from '../breaker/create-database-probe.ts';
import type { WorkerConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { createSql } from '../postgres/db.ts';
import type { StoreWiring } from './store-wiring.ts';

/**
 * The PostgreSQL store from a worker's configuration: a postgres.js pool of `DB_POOL_SIZE` (`createSql`), and the
 * pause's probe on a pool of one of its own, made at the first probe (its code too: a Lambda worker, which never
 * probes, neither loads nor opens anything of it).
 *
 * @throws ConfigError when the configuration is of the DynamoDB store.
 * @internal
 */
export const postgresWiring: StoreWiring<{ readonly sql: ReturnType<typeof createSql> }> = (
  config,
  { probeTimeoutMs },
) => {
  const database = databaseOf(config);
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

function databaseOf(config: WorkerConfig): WorkerConfig['database'] {
  if (config.store.kind === 'dynamodb') {
    throw new ConfigError(
      'WORKER_STORE is "dynamodb", but this worker is wired for the PostgreSQL store. Build a DynamoDB worker with createDynamoWorkerFromConfig from sqs-inbox-worker/dynamodb (the shipped entry is lambda/handlers/worker-dynamodb.ts, which SqsDatabaseWorker deploys for store: "dynamodb"), or remove WORKER_STORE from its environment.',
    );
  }
  return config.database;
}
