import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

/** Properties of {@link WorkerTable}; the defaults are decided by `SqsDatabaseWorker`. */
export interface WorkerTableProps {
  /** Keep the table (and its items) when it is removed from the stack or replaced. */
  readonly production: boolean;
  /** Deletion protection of the table. */
  readonly deletionProtection: boolean;
  /** Point-in-time recovery window, 1 to 35 whole days. */
  readonly recoveryPeriod: Duration;
}

/** Name of the table's partition key attribute (`IDEMP#<key>`, or the domain's own prefixes). */
export const TABLE_PARTITION_KEY = 'PK';
/** Name of the table's sort key attribute (`WORKER#<consumer>`, …). */
export const TABLE_SORT_KEY = 'SK';
/** The attribute DynamoDB's TTL reads: epoch seconds after which an item is removed (retention). */
export const TABLE_TTL_ATTRIBUTE = 'ttl';

/**
 * What the worker does on the table, and nothing more: the gate (conditional PutItem), reads of an inbox or
 * domain item (GetItem), failure bookkeeping and quarantine counts (UpdateItem), the domain mutation with the
 * inbox completion (TransactWriteItems, authorized item by item as PutItem / UpdateItem / DeleteItem /
 * ConditionCheckItem — there is no `dynamodb:TransactWriteItems` IAM action; DeleteItem because a handler's
 * writes may be `Delete`s, which the handler API offers), and item collections of one key (Query). No Scan, no
 * batch writes, no table administration; the engine itself deletes nothing (retention is the TTL's).
 */
export const WORKER_TABLE_ACTIONS = [
  'dynamodb:ConditionCheckItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
] as const;

/**
 * The DynamoDB store's one table: inbox items, domain items and quarantine items under a generic `PK`/`SK` key
 * (single-table design), on-demand capacity (nothing to size, nothing billed for throughput while idle), TTL on
 * `ttl` (retention without a job), point-in-time recovery, and encryption at rest with the AWS managed key.
 *
 * Why the AWS managed key (`aws/dynamodb`) rather than a customer managed one: the items are encrypted with a
 * KMS key of this account whose every use CloudTrail records, and nothing else is needed — the worker's role
 * holds only the DynamoDB actions above (no `kms:*` grant to keep in step with a key policy), and there is no
 * key to pay for monthly, rotate or lose. A customer managed key buys control this table does not use: a key
 * policy of its own, cross-account access, disabling the key to make the data unreadable. A production table
 * is retained on removal and replacement, like the queues, and deletion protection is on.
 */
export class WorkerTable extends Construct {
  /** The table. */
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: WorkerTableProps) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: TABLE_PARTITION_KEY, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SORT_KEY, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TABLE_TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: {
        pointInTimeRecoveryEnabled: true,
        recoveryPeriodInDays: props.recoveryPeriod.toDays(),
      },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection,
      removalPolicy: props.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
  }

  /**
   * Lets `grantee` (the worker function) do what the store does ({@link WORKER_TABLE_ACTIONS}) on this table
   * only: its ARN, no index, no other table.
   */
  grantWorker(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [...WORKER_TABLE_ACTIONS],
      resourceArns: [this.table.tableArn],
    });
  }
}
