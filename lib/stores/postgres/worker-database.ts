import { ArnFormat, type Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as rds from 'aws-cdk-lib/aws-rds';
import { Construct } from 'constructs';
import type { DatabaseUsers } from '../../resolve-worker-settings.ts';

/** Properties of {@link WorkerDatabase}; the defaults are decided by `SqsDatabaseWorker`. */
export interface WorkerDatabaseProps {
  readonly vpc: ec2.IVpc;
  readonly vpcSubnets: ec2.SubnetSelection;
  readonly production: boolean;
  readonly instanceType: ec2.InstanceType;
  readonly postgresVersion: rds.PostgresEngineVersion;
  readonly multiAz: boolean;
  readonly deletionProtection: boolean;
  readonly backupRetention: Duration;
  readonly allocatedStorageGiB: number;
  readonly databaseName: string;
  /** The database user of each function (IAM, end to end through the proxy); the proxy may sign in as each. */
  readonly dbUsers: DatabaseUsers;
  readonly secretRotationInterval: Duration;
  readonly proxyMaxConnectionsPercent: number;
}

/**
 * RDS PostgreSQL in isolated subnets (encrypted, backups, TLS forced, IAM authentication on), its master
 * credentials in Secrets Manager with single-user rotation, and an RDS Proxy with end-to-end IAM authentication
 * and TLS required.
 *
 * Why end-to-end IAM on the proxy: the worker's role then has no password at all. The proxy signs its own IAM
 * token to the database as the same user (the proxy role holds `rds-db:connect` on the instance for each user:
 * worker, relay and ops), and the migration function creates the roles with `grant rds_iam`. Only the master user
 * has a password; it lives in Secrets Manager, rotates, and is used by the migration function, directly against
 * the instance. Each function may connect as its own user only, so it holds only that user's privileges.
 */
export class WorkerDatabase extends Construct {
  /** The PostgreSQL instance. */
  readonly instance: rds.DatabaseInstance;
  /** The RDS Proxy the worker and the relay connect through. */
  readonly proxy: rds.DatabaseProxy;
  /** Master credentials (username, password, host, port), rotated. */
  readonly masterSecret: rds.DatabaseSecret;
  /** Name of the database user of each function. */
  readonly dbUsers: DatabaseUsers;
  /** Name of the database. */
  readonly databaseName: string;

  constructor(scope: Construct, id: string, props: WorkerDatabaseProps) {
    super(scope, id);
    this.dbUsers = props.dbUsers;
    this.databaseName = props.databaseName;
    const engine = rds.DatabaseInstanceEngine.postgres({ version: props.postgresVersion });

    this.masterSecret = new rds.DatabaseSecret(this, 'MasterSecret', { username: 'postgres' });
    const parameterGroup = new rds.ParameterGroup(this, 'Parameters', {
      engine,
      description: 'sqs-inbox-worker: TLS only, bounded idle transactions',
      parameters: {
        'rds.force_ssl': '1',
        // A crashed worker must not hold row locks for long (pattern: short transactions).
        idle_in_transaction_session_timeout: '60000',
      },
    });
    this.instance = new rds.DatabaseInstance(this, 'Instance', {
      engine,
      instanceType: props.instanceType,
      vpc: props.vpc,
      vpcSubnets: props.vpcSubnets,
      credentials: rds.Credentials.fromSecret(this.masterSecret),
      databaseName: props.databaseName,
      parameterGroup,
      storageEncrypted: true,
      storageType: rds.StorageType.GP3,
      allocatedStorage: props.allocatedStorageGiB,
      maxAllocatedStorage: props.allocatedStorageGiB * 4,
      multiAz: props.multiAz,
      deletionProtection: props.deletionProtection,
      backupRetention: props.backupRetention,
      iamAuthentication: true,
      publiclyAccessible: false,
      autoMinorVersionUpgrade: true,
      cloudwatchLogsExports: ['postgresql', 'upgrade'],
      enablePerformanceInsights: true,
      // Production: a final snapshot on removal or replacement rather than RETAIN. A retained instance would keep
      // its subnet group and security group in use (the stack could not finish deleting) and keep running and
      // billing; the snapshot holds the data and restores into a new stack. Deletion protection comes first.
      removalPolicy: props.production ? RemovalPolicy.SNAPSHOT : RemovalPolicy.DESTROY,
    });
    this.instance.addRotationSingleUser({
      automaticallyAfter: props.secretRotationInterval,
      vpcSubnets: props.vpcSubnets,
    });
    Validations.of(this.instance).acknowledge({
      id: 'AwsSolutions-RDS11',
      reason:
        'The default port is kept: the instance is in isolated subnets behind security groups, and a non-default port is obscurity, not a control.',
    });
    if (!props.multiAz) {
      Validations.of(this.instance).acknowledge({
        id: 'AwsSolutions-RDS3',
        reason: 'Multi-AZ is off only for a non-production stage (production stages default to multi-AZ).',
      });
    }
    if (!props.deletionProtection) {
      Validations.of(this.instance).acknowledge({
        id: 'AwsSolutions-RDS10',
        reason: 'Deletion protection is off only for a non-production stage so it can be torn down.',
      });
    }

    const stack = Stack.of(this);
    const proxyRole = new iam.Role(this, 'ProxyRole', {
      assumedBy: new iam.ServicePrincipal('rds.amazonaws.com'),
      description:
        'RDS Proxy: end-to-end IAM authentication to the database as the worker, relay, ops and health users',
    });
    // End-to-end IAM: the proxy signs in to the database as the client's user, so every user a client may use
    // must be listed here, or its connections fail at the proxy.
    proxyRole.addToPolicy(
      new iam.PolicyStatement({
        actions: ['rds-db:connect'],
        resources: Object.values(props.dbUsers).map((user) =>
          stack.formatArn({
            service: 'rds-db',
            resource: 'dbuser',
            resourceName: `${this.instance.instanceResourceId}/${user}`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ),
      }),
    );
    this.proxy = new rds.DatabaseProxy(this, 'Proxy', {
      proxyTarget: rds.ProxyTarget.fromInstance(this.instance),
      vpc: props.vpc,
      vpcSubnets: props.vpcSubnets,
      // Clients must present an IAM token, and the proxy signs its own to the database: no secret per user.
      defaultAuthScheme: rds.DefaultAuthScheme.IAM_AUTH,
      requireTLS: true,
      role: proxyRole,
      maxConnectionsPercent: props.proxyMaxConnectionsPercent,
      maxIdleConnectionsPercent: Math.min(50, props.proxyMaxConnectionsPercent),
      debugLogging: false,
    });
    this.instance.connections.allowDefaultPortFrom(this.proxy, 'RDS Proxy to PostgreSQL');
  }

  /** Lets `grantee` (the worker function, in the VPC) connect through the proxy as the worker's database user. */
  grantWorkerConnect(grantee: iam.IGrantable & ec2.IConnectable): void {
    this.grantFunctionConnect(grantee, this.dbUsers.worker);
  }

  /** Lets `grantee` (the outbox relay, in the VPC) connect through the proxy as the relay's database user. */
  grantRelayConnect(grantee: iam.IGrantable & ec2.IConnectable): void {
    this.grantFunctionConnect(grantee, this.dbUsers.relay);
  }

  /** Lets `grantee` (the health job, in the VPC) connect through the proxy as the health job's database user. */
  grantHealthConnect(grantee: iam.IGrantable & ec2.IConnectable): void {
    this.grantFunctionConnect(grantee, this.dbUsers.health);
  }

  /** Lets `grantee` (the retention job, in the VPC) connect through the proxy as the retention job's database user. */
  grantRetentionConnect(grantee: iam.IGrantable & ec2.IConnectable): void {
    this.grantFunctionConnect(grantee, this.dbUsers.retention);
  }

  /**
   * Lets `grantee` (an operator's role) sign IAM tokens for the ops database user, whose privileges the
   * `sqs-worker` ops commands need. Network access to the proxy (a bastion, a VPN) is the operator's setup.
   */
  grantOpsConnect(grantee: iam.IGrantable): iam.Grant {
    return this.proxy.grantConnect(grantee, this.dbUsers.ops);
  }

  private grantFunctionConnect(grantee: iam.IGrantable & ec2.IConnectable, user: string): void {
    this.proxy.grantConnect(grantee, user);
    this.proxy.connections.allowFrom(grantee, ec2.Port.tcp(5432), 'functions to RDS Proxy');
  }
}
