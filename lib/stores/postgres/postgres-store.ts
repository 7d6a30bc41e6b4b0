import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as rds from 'aws-cdk-lib/aws-rds';
import type { Construct } from 'constructs';
import { bundledFunction, PROJECT_ROOT } from '../../bundled-function.ts';
import type { ResolvedWorkerSettings } from '../../resolve-worker-settings.ts';
import type { WorkerSettings } from '../../worker-settings.ts';
import type { WorkerStoreParts } from '../worker-store-parts.ts';
import { WorkerDatabase } from './worker-database.ts';

const POSTGRES_PORT = 5432;
/** Amazon's CA certificates (RDS CAs included) in the Lambda Node.js runtime, for `NODE_EXTRA_CA_CERTS`. */
const LAMBDA_RUNTIME_CA_BUNDLE = '/var/runtime/ca-cert.pem';

/**
 * The PostgreSQL store: RDS PostgreSQL with a rotated master secret behind an IAM-authenticated RDS Proxy in
 * `vpc`, one database user per function, and the migration function that applies the migrations and provisions
 * those users on every deploy (its trigger is the construct's: it runs before the worker and the jobs).
 *
 * @internal
 */
export function createPostgresStore(
  scope: Construct,
  props: WorkerSettings & { readonly vpc: ec2.IVpc },
  settings: ResolvedWorkerSettings,
  production: boolean,
): WorkerStoreParts {
  const vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
  const databaseName = props.databaseName ?? 'worker';
  const database = new WorkerDatabase(scope, 'Database', {
    vpc: props.vpc,
    vpcSubnets,
    production,
    instanceType:
      props.instanceType ??
      (production
        ? ec2.InstanceType.of(ec2.InstanceClass.R6G, ec2.InstanceSize.LARGE)
        : ec2.InstanceType.of(ec2.InstanceClass.T4G, ec2.InstanceSize.MICRO)),
    postgresVersion: props.postgresVersion ?? rds.PostgresEngineVersion.VER_17,
    multiAz: props.multiAz ?? production,
    deletionProtection: props.deletionProtection ?? production,
    backupRetention: props.backupRetention ?? Duration.days(production ? 14 : 1),
    allocatedStorageGiB: props.allocatedStorageGiB ?? 20,
    databaseName,
    dbUsers: settings.dbUsers,
    secretRotationInterval: props.secretRotationInterval ?? Duration.days(30),
    proxyMaxConnectionsPercent: settings.proxyMaxConnectionsPercent,
  });
  const migrationFunction = createMigrationFunction(scope, props, settings, database, vpcSubnets);
  return {
    kind: 'postgres',
    database,
    migrationFunction,
    table: undefined,
    connectionEnvironment: {
      DB_HOST: database.proxy.endpoint,
      DB_PORT: String(POSTGRES_PORT),
      DB_NAME: databaseName,
      DB_AUTH: 'iam',
      DB_SSL: 'true',
    },
    workerEnvironment: { DB_USER: settings.dbUsers.worker, DB_POOL_SIZE: String(settings.dbPoolSize) },
    grantWorker: (grantee) => database.grantWorkerConnect(grantee),
  };
}

/** The function that applies pending migrations and provisions the database roles (runs on every deploy). */
function createMigrationFunction(
  scope: Construct,
  props: WorkerSettings & { readonly vpc: ec2.IVpc },
  settings: ResolvedWorkerSettings,
  database: WorkerDatabase,
  vpcSubnets: ec2.SubnetSelection,
): lambda.Function {
  const { dbUsers } = settings;
  const migrationsDirectory = props.migrationsDirectory ?? join(PROJECT_ROOT, 'migrations');
  const migrationFunction = bundledFunction(scope, 'MigrationFunction', {
    entry: join(PROJECT_ROOT, 'lambda/handlers/migrate.ts'),
    description:
      'Applies pending migrations and provisions the database roles of the worker, the relay and the ops commands (runs on every deploy)',
    vpc: props.vpc,
    vpcSubnets,
    timeout: Duration.minutes(5),
    environment: {
      DB_HOST: database.instance.dbInstanceEndpointAddress,
      DB_PORT: database.instance.dbInstanceEndpointPort,
      DB_NAME: props.databaseName ?? 'worker',
      DB_SECRET_ARN: database.masterSecret.secretArn,
      DB_SSL: 'true',
      // The instance's certificate is issued by the RDS CA, which Node does not trust by default; the Lambda
      // Node.js runtime ships Amazon's CAs (RDS included) in this file. The worker and the relay connect
      // through the proxy, whose ACM certificate Node's default CAs already verify (and skip this cold-start
      // cost). A container image would copy the RDS bundle in and point this variable at it instead.
      NODE_EXTRA_CA_CERTS: LAMBDA_RUNTIME_CA_BUNDLE,
      // One database user per function, each with its own privileges (lambda/postgres/provision-roles.ts).
      WORKER_DB_USER: dbUsers.worker,
      ...((props.outboxRelay ?? true) ? { RELAY_DB_USER: dbUsers.relay } : {}),
      OPS_DB_USER: dbUsers.ops,
      // The worker's and the relay's statement and lock timeouts, set as their roles' defaults: nothing on the
      // message path sets them (SET and set_config pin connections to RDS Proxy).
      DB_STATEMENT_TIMEOUT_MS: String(settings.dbStatementTimeoutMs),
      DB_LOCK_TIMEOUT_MS: String(settings.dbLockTimeoutMs),
      ...((props.healthCheck ?? true) ? { HEALTH_DB_USER: dbUsers.health } : {}),
      ...(settings.retention ? { RETENTION_DB_USER: dbUsers.retention } : {}),
      MIGRATIONS_DIR: 'migrations',
    },
    // The migration files travel with the code: <bundle>/migrations/NNNNN_name.sql.
    files: [{ from: migrationsDirectory, into: 'migrations', suffix: '.sql' }],
  });
  database.masterSecret.grantRead(migrationFunction);
  database.instance.connections.allowDefaultPortFrom(migrationFunction, 'migrations to PostgreSQL');
  return migrationFunction;
}
