import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import {
  AUDIT_PK_PREFIX,
  EFFECT_PK_PREFIX,
  INBOX_PK_PREFIX,
  OUTBOX_PK_PREFIX,
  QUARANTINE_PK_PREFIX,
} from '../../../lambda/stores/dynamodb/item-keys.ts';

/** Properties of {@link WorkerTable}; the defaults are decided by `SqsDatabaseWorker`. */
export interface WorkerTableProps {
  /** Keep the table (and its items) when it is removed from the stack or replaced. */
  readonly production: boolean;
  /** Deletion protection of the table. */
  readonly deletionProtection: boolean;
  /** Point-in-time recovery window, 1 to 35 whole days. */
  readonly recoveryPeriod: Duration;
  /** A stream of new images (the outbox relay's trigger). @default false */
  readonly stream?: boolean;
}

/** Name of the table's partition key attribute (`IDEMP#<key>`, or the domain's own prefixes). */
export const TABLE_PARTITION_KEY = 'PK';
/** Name of the table's sort key attribute (`WORKER#<consumer>`, …). */
export const TABLE_SORT_KEY = 'SK';
/** The attribute DynamoDB's TTL reads: epoch seconds after which an item is removed (retention). */
export const TABLE_TTL_ATTRIBUTE = 'ttl';

/**
 * Partition key prefixes of the example domain's items (`lambda/domain/dynamodb/`): `CASE#<caseId>`,
 * `LEDGER#<paymentId>`, `ACCOUNT#<accountId>`, `DOCUMENT#<documentId>`. The default of `domainKeyPrefixes`, since the stack's worker runs the
 * example handlers unless `workerEntry` names your own.
 */
export const EXAMPLE_DOMAIN_KEY_PREFIXES: readonly string[] = ['CASE#', 'LEDGER#', 'ACCOUNT#', 'DOCUMENT#'];

/**
 * Partition key prefixes the toolkit keeps for its own items: inbox (`IDEMP#`), quarantine (`QUARANTINE#`), the
 * ops commands' audit trail (`AUDIT#`), the external-effect log (`EFFECT#`) and the outbox (`OUTBOX#`). A domain
 * prefix may neither start with one nor be the start of one.
 */
export const RESERVED_KEY_PREFIXES: readonly string[] = [
  INBOX_PK_PREFIX,
  QUARANTINE_PK_PREFIX,
  AUDIT_PK_PREFIX,
  EFFECT_PK_PREFIX,
  OUTBOX_PK_PREFIX,
];

/**
 * What the worker may do on each kind of item, and nothing more (each grant conditioned on `dynamodb:LeadingKeys`,
 * the partition key, matching its prefixes):
 * - **inbox items** (`IDEMP#`): the gate (conditional PutItem), its read (GetItem), the lease takeover, the failure
 *   bookkeeping and the completion (UpdateItem, alone or inside the transaction). No DeleteItem: the engine deletes
 *   nothing (settled items go by TTL), so a defect or a handler cannot remove a COMPLETED item and reapply a message.
 * - **quarantine items** (`QUARANTINE#`): the upsert of a terminal message (UpdateItem) only.
 * - **effect log items** (`EFFECT#`): `performDynamoExternalEffect`'s conditional writes (UpdateItem) and its
 *   consistent read (GetItem); no DeleteItem.
 * - **outbox items** (`OUTBOX#`): a handler's `dynamoOutboxWrite` entry (UpdateItem, inside the transaction).
 * - **domain items** (`domainKeyPrefixes`): what a handler's writes and reads may be — the entries of the
 *   transaction (PutItem, UpdateItem, DeleteItem, ConditionCheckItem: DynamoDB authorizes a TransactWriteItems item by
 *   item, there is no `dynamodb:TransactWriteItems` action; DeleteItem because the handler API offers `Delete`) and
 *   its reads (GetItem, Query).
 *
 * Audit items (`AUDIT#`) and any other prefix get nothing. No Scan, no batch writes, no table administration.
 */
export const WORKER_ITEM_ACTIONS = {
  inbox: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  quarantine: ['dynamodb:UpdateItem'],
  effects: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  outbox: ['dynamodb:UpdateItem'],
  domain: [
    'dynamodb:ConditionCheckItem',
    'dynamodb:DeleteItem',
    'dynamodb:GetItem',
    'dynamodb:PutItem',
    'dynamodb:Query',
    'dynamodb:UpdateItem',
  ],
} as const;

/**
 * What the `sqs-worker` ops commands call on the table with `--store dynamodb`: reads (GetItem, BatchGetItem for
 * `dlq peek`, Query, and Scan for `inbox stats`, `quarantine list` and the newer-events check, which no key condition
 * can scope), the re-arm and release writes (UpdateItem, PutItem of audit items, inside TransactWriteItems too) and
 * the smoke canaries' clean-up (DeleteItem). Given to an operator's role by {@link WorkerTable.grantOps}.
 */
export const OPS_TABLE_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:Scan',
  'dynamodb:UpdateItem',
] as const;

/**
 * What the DynamoDB outbox relay calls on outbox items (`OUTBOX#`): the read-back of a batch (BatchGetItem) and the
 * PUBLISHED mark (UpdateItem). Its stream reads come from the table's stream grant.
 */
export const RELAY_TABLE_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem'] as const;

/** Every action the worker may call on its table (on the items {@link WORKER_ITEM_ACTIONS} scopes each to). */
export const WORKER_TABLE_ACTIONS = [...new Set(Object.values(WORKER_ITEM_ACTIONS).flat())].sort();

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
      ...(props.stream ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
      removalPolicy: props.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
  }

  /**
   * Lets `grantee` (the worker function) do what the store and its handlers do ({@link WORKER_ITEM_ACTIONS}) on the
   * items of this table only: its ARN (no index, no other table), one statement per kind of item, each allowed only
   * when every partition key of the request starts with that kind's prefixes (`ForAllValues:StringLike` on
   * `dynamodb:LeadingKeys`). With no `domainKeyPrefixes` the worker gets no domain access at all.
   *
   * IAM conditions only see the partition key. The consumer is in the sort key (`WORKER#<consumer>`), so the grant
   * cannot tell this worker's inbox items from another consumer's in the same table: each worker has a table of its
   * own (this construct's).
   */
  grantWorker(grantee: iam.IGrantable, domainKeyPrefixes: readonly string[]): void {
    const statement = (sid: string, actions: readonly string[], prefixes: readonly string[]) =>
      new iam.PolicyStatement({
        sid,
        actions: [...actions],
        resources: [this.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': prefixes.map((prefix) => `${prefix}*`) },
        },
      });
    grantee.grantPrincipal.addToPrincipalPolicy(
      statement('WorkerInboxItems', WORKER_ITEM_ACTIONS.inbox, [INBOX_PK_PREFIX]),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      statement('WorkerQuarantineItems', WORKER_ITEM_ACTIONS.quarantine, [QUARANTINE_PK_PREFIX]),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      statement('WorkerEffectLogItems', WORKER_ITEM_ACTIONS.effects, [EFFECT_PK_PREFIX]),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      statement('WorkerOutboxItems', WORKER_ITEM_ACTIONS.outbox, [OUTBOX_PK_PREFIX]),
    );
    if (domainKeyPrefixes.length > 0) {
      grantee.grantPrincipal.addToPrincipalPolicy(
        statement('HandlerDomainItems', WORKER_ITEM_ACTIONS.domain, domainKeyPrefixes),
      );
    }
  }

  /**
   * Lets `grantee` (the outbox relay) read the table's stream and read and mark outbox items
   * ({@link RELAY_TABLE_ACTIONS}, `OUTBOX#` partition keys only); nothing else of the table.
   */
  grantRelay(grantee: iam.IGrantable): void {
    this.table.grantStreamRead(grantee);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'RelayOutboxItems',
        actions: [...RELAY_TABLE_ACTIONS],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${OUTBOX_PK_PREFIX}*`] } },
      }),
    );
  }

  /**
   * Lets `grantee` (an operator's role) run the `sqs-worker` ops commands on this table ({@link OPS_TABLE_ACTIONS}):
   * its ARN only, no index, no table administration. Not scoped by partition key: a Scan has none. The commands
   * also need the queues (`sqs:ReceiveMessage`, `SendMessage`, `DeleteMessage`, …), which the operator's role gets
   * from the queues' own grants.
   */
  grantOps(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [...OPS_TABLE_ACTIONS],
      resourceArns: [this.table.tableArn],
    });
  }
}
