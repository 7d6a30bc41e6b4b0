import { Duration } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { ResolvedWorkerSettings } from '../../resolve-worker-settings.ts';
import type { WorkerSettings } from '../../worker-settings.ts';
import type { WorkerStoreParts } from '../worker-store-parts.ts';
import { EXAMPLE_DOMAIN_KEY_PREFIXES, WorkerTable } from './worker-table.ts';

/**
 * The DynamoDB store: one on-demand table (TTL on `ttl`, point-in-time recovery, retained in production, a stream
 * for the outbox relay unless `outboxRelay` is false), the worker's grant scoped to its inbox, quarantine, effect
 * log, outbox and the domain key prefixes, and no connection to configure.
 *
 * @internal
 */
export function createDynamoDbStore(
  scope: Construct,
  props: WorkerSettings,
  settings: ResolvedWorkerSettings,
  production: boolean,
): WorkerStoreParts {
  const table = new WorkerTable(scope, 'Table', {
    production,
    deletionProtection: props.deletionProtection ?? production,
    recoveryPeriod: props.backupRetention ?? Duration.days(production ? 14 : 1),
    // The outbox relay's trigger.
    stream: props.outboxRelay ?? true,
  });
  return {
    kind: 'dynamodb',
    database: undefined,
    migrationFunction: undefined,
    table,
    connectionEnvironment: {},
    workerEnvironment: {
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: table.table.tableName,
      // The inbox items' TTL: a completed item outlives every copy of its message in the queue and the DLQ.
      RETENTION_SOURCE_SECONDS: String(settings.retentionPeriod.toSeconds()),
      RETENTION_DLQ_SECONDS: String(settings.dlqRetentionPeriod.toSeconds()),
    },
    grantWorker: (grantee) =>
      table.grantWorker(grantee, props.domainKeyPrefixes ?? EXAMPLE_DOMAIN_KEY_PREFIXES),
  };
}
