import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { SQSRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import type { DynamoWrite } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { EFFECT_PK_PREFIX, inboxKey, quarantineKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { parseSchema } from '../../lambda/worker/parse-schema.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';
import { OPS_TABLE_ACTIONS } from '../../lib/stores/dynamodb/worker-table.ts';
import { buildDemoMessages } from '../../tools/local/demo-messages.ts';
import { dynamoAuditItem } from '../../tools/ops/stores/dynamodb/dynamo-audit-item.ts';
import { evaluateRole, functionRole, resourceArn } from './role-policy.ts';

// What the DynamoDB worker's synthesized role lets it do to the items of its table, decided by an IAM policy
// evaluator over the role's policies (dynamodb:LeadingKeys is the partition key of the item a request touches).

const noBundling = { 'aws:cdk:bundling-stacks': [] };
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

function synth(id: string, worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const stack = new SqsInboxWorkerStack(app, id, {
    worker: { store: 'dynamodb', alarms: 'none', queueIdentity: DEPLOYED_QUEUES, ...worker },
  });
  const template = Template.fromStack(stack);
  const table = Object.keys(template.findResources('AWS::DynamoDB::Table'))[0] as string;
  const role = functionRole(template, 'SQS → DynamoDB inbox worker');
  /** What the worker's role decides for `action` on the item whose partition key is `pk`. */
  const decide = (action: string, pk: string) =>
    evaluateRole(template, role, {
      action: `dynamodb:${action}`,
      resource: resourceArn(template, table),
      context: { 'dynamodb:LeadingKeys': [pk] },
    });
  return { template, table, role, decide };
}

/** The IAM action and partition key of each domain write the example handlers return for the demo's messages. */
async function exampleWrites(): Promise<{ action: string; pk: string }[]> {
  const demo = buildDemoMessages('grant', 20, {
    accountId: (index) => `acct-${index % 3}`,
    deadlinesViaOutbox: false,
  });
  const writes: DynamoWrite[] = [];
  for (const { body } of demo.messages) {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(body) as Envelope;
    } catch {
      continue; // a poison body: never reaches a handler
    }
    const handler = exampleDynamoHandlers.find(
      (each) => each.messageType === envelope.messageType && each.schemaVersion === envelope.schemaVersion,
    );
    const payload = handler && parseSchema(handler.payload, envelope.payload);
    if (!handler || !payload?.success) continue;
    const result = await handler
      .handle({
        client: undefined as never, // the example handlers do not read
        table: 'WorkerTable',
        consumer: 'case-worker',
        payload: payload.data,
        envelope,
        record: {} as SQSRecord,
      })
      .catch(() => undefined); // a terminal stage: no write
    writes.push(...(result?.writes ?? []));
  }
  return writes.map((write) => {
    if (write.Put) return { action: 'PutItem', pk: String(write.Put.Item?.PK) };
    if (write.Update) return { action: 'UpdateItem', pk: String(write.Update.Key?.PK) };
    if (write.Delete) return { action: 'DeleteItem', pk: String(write.Delete.Key?.PK) };
    return { action: 'ConditionCheckItem', pk: String(write.ConditionCheck?.Key?.PK) };
  });
}

describe('Class: WorkerTable — the worker may write its own items and its domain, nothing else (default prefixes)', () => {
  let worker: ReturnType<typeof synth>;
  beforeAll(() => {
    worker = synth('DynamoGrant');
  });
  const own = inboxKey('case-worker', 'payment-1').PK;
  const quarantined = quarantineKey('case-worker', 'a'.repeat(64)).PK;
  const audit = dynamoAuditItem(
    { consumer: 'case-worker', action: 'quarantine release', outcome: 'STARTED' },
    'operator',
    new Date(),
  ).item.PK as string;

  it('allows the gate, its read and the bookkeeping on inbox items, and the quarantine upsert', async () => {
    expect(await worker.decide('PutItem', own)).toBe('Allowed');
    expect(await worker.decide('GetItem', own)).toBe('Allowed');
    expect(await worker.decide('UpdateItem', own)).toBe('Allowed');
    expect(await worker.decide('UpdateItem', quarantined)).toBe('Allowed');
  });

  it('refuses to delete an inbox item, a COMPLETED one included, and to delete or overwrite a quarantine item', async () => {
    expect(await worker.decide('DeleteItem', own)).toBe('ImplicitlyDenied');
    expect(await worker.decide('DeleteItem', quarantined)).toBe('ImplicitlyDenied');
    expect(await worker.decide('PutItem', quarantined)).toBe('ImplicitlyDenied');
  });

  it("allows the effect log's conditional writes and consistent read (EFFECT#), and no delete or overwrite", async () => {
    const effect = `${EFFECT_PK_PREFIX}case-worker/escalation-notification:case-7`;
    expect(await worker.decide('UpdateItem', effect)).toBe('Allowed');
    expect(await worker.decide('GetItem', effect)).toBe('Allowed');
    expect(await worker.decide('DeleteItem', effect)).toBe('ImplicitlyDenied');
    expect(await worker.decide('PutItem', effect)).toBe('ImplicitlyDenied');
  });

  it('refuses any write or read of an operator audit item (AUDIT#)', async () => {
    expect(audit.startsWith('AUDIT#')).toBe(true);
    for (const action of ['PutItem', 'UpdateItem', 'DeleteItem', 'GetItem', 'ConditionCheckItem']) {
      expect(await worker.decide(action, audit), action).toBe('ImplicitlyDenied');
    }
  });

  it('allows every write the example handlers return, and a handler Delete of a domain item', async () => {
    // Prepare: the example domain's writes for the demo's messages
    const writes = await exampleWrites();
    expect(new Set(writes.map(({ pk }) => pk.split('#')[0]))).toEqual(new Set(['CASE', 'LEDGER', 'ACCOUNT']));

    // Act
    const refused = [];
    for (const write of writes) {
      if ((await worker.decide(write.action, write.pk)) !== 'Allowed') refused.push(write);
    }

    // Assess
    expect(refused).toEqual([]);
    expect(await worker.decide('DeleteItem', 'CASE#c-1')).toBe('Allowed');
    expect(await worker.decide('Query', 'ACCOUNT#a-1')).toBe('Allowed');
  });

  it('refuses items of a prefix that is neither its own nor its domain', async () => {
    for (const action of ['PutItem', 'UpdateItem', 'DeleteItem', 'GetItem']) {
      expect(await worker.decide(action, 'ORDER#o-1'), action).toBe('ImplicitlyDenied');
    }
  });

  it('conditions every DynamoDB statement of the worker on the partition key, on the table ARN only', () => {
    // Prepare: the worker role's policies (the stream relay's role has its own grant, below).
    const statements = Object.values(
      worker.template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: worker.role }] } }),
    ).flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement as { Sid?: string; Action: string | string[] }[],
    );
    const dynamo = statements.filter((statement) =>
      ([] as string[]).concat(statement.Action).some((action) => action.startsWith('dynamodb:')),
    );

    // Assess: DeleteItem only in the domain statement
    expect(dynamo).toEqual([
      {
        Sid: 'WorkerInboxItems',
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Resource: { 'Fn::GetAtt': [worker.table, 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['IDEMP#*'] } },
      },
      {
        Sid: 'WorkerQuarantineItems',
        Effect: 'Allow',
        Action: 'dynamodb:UpdateItem',
        Resource: { 'Fn::GetAtt': [worker.table, 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['QUARANTINE#*'] } },
      },
      {
        Sid: 'WorkerEffectLogItems',
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        Resource: { 'Fn::GetAtt': [worker.table, 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['EFFECT#*'] } },
      },
      {
        Sid: 'WorkerOutboxItems',
        Effect: 'Allow',
        Action: 'dynamodb:UpdateItem',
        Resource: { 'Fn::GetAtt': [worker.table, 'Arn'] },
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['OUTBOX#*'] } },
      },
      {
        Sid: 'HandlerDomainItems',
        Effect: 'Allow',
        Action: [
          'dynamodb:ConditionCheckItem',
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        Resource: { 'Fn::GetAtt': [worker.table, 'Arn'] },
        Condition: {
          'ForAllValues:StringLike': {
            'dynamodb:LeadingKeys': ['CASE#*', 'LEDGER#*', 'ACCOUNT#*', 'DOCUMENT#*'],
          },
        },
      },
    ]);
    worker.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: worker.role }],
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([Match.objectLike({ Sid: 'WorkerInboxItems' })]),
      }),
    });
  });
});

describe('Class: WorkerTable — domainKeyPrefixes of your own', () => {
  it('grants the given prefixes instead of the example domain', async () => {
    // Act
    const worker = synth('DynamoGrantOrders', { domainKeyPrefixes: ['ORDER#', 'CUSTOMER#'] });

    // Assess
    expect(await worker.decide('PutItem', 'ORDER#o-1')).toBe('Allowed');
    expect(await worker.decide('DeleteItem', 'CUSTOMER#c-1')).toBe('Allowed');
    expect(await worker.decide('PutItem', 'CASE#c-1')).toBe('ImplicitlyDenied');
    expect(await worker.decide('PutItem', inboxKey('case-worker', 'k').PK)).toBe('Allowed');
  });

  it('gives no domain access at all with an empty list', async () => {
    // Act
    const worker = synth('DynamoGrantNone', { domainKeyPrefixes: [] });

    // Assess
    expect(await worker.decide('PutItem', 'CASE#c-1')).toBe('ImplicitlyDenied');
    expect(await worker.decide('UpdateItem', inboxKey('case-worker', 'k').PK)).toBe('Allowed');
  });
});

describe('Class: WorkerTable — grantOps()', () => {
  it("lets an operator's role run the ops commands on the table, and nothing of another table or its administration", async () => {
    // Prepare
    const app = new App({ context: noBundling });
    const stack = new SqsInboxWorkerStack(app, 'DynamoGrantOps', {
      worker: { store: 'dynamodb', alarms: 'none', queueIdentity: DEPLOYED_QUEUES },
    });
    const operator = new iam.Role(stack, 'Operator', { assumedBy: new iam.AccountRootPrincipal() });

    // Act
    stack.worker.table?.grantOps(operator);

    // Assess
    const template = Template.fromStack(stack);
    const table = Object.keys(template.findResources('AWS::DynamoDB::Table'))[0] as string;
    const role = Object.keys(template.findResources('AWS::IAM::Role')).find((id) =>
      id.startsWith('Operator'),
    );
    const decide = (action: string, resource = resourceArn(template, table)) =>
      evaluateRole(template, role as string, { action: `dynamodb:${action}`, resource });
    for (const action of OPS_TABLE_ACTIONS)
      expect(await decide(action.replace('dynamodb:', ''))).toBe('Allowed');
    expect(await decide('DeleteTable')).toBe('ImplicitlyDenied');
    expect(await decide('UpdateTable')).toBe('ImplicitlyDenied');
    expect(await decide('Scan', 'arn:aws:dynamodb:eu-west-1:123456789012:table/another')).toBe(
      'ImplicitlyDenied',
    );
  });

  it('holds every DynamoDB call the ops commands make', () => {
    // Prepare: the SDK commands named in the DynamoDB ops store's sources (a TransactWriteItems is authorized item
    // by item: Put and Update).
    const folder = join(PROJECT_ROOT, 'tools/ops/stores/dynamodb');
    const sources = readdirSync(folder)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => readFileSync(join(folder, name), 'utf8'))
      .join('\n');
    const called = new Set<string>();
    for (const [, name] of sources.matchAll(/\b(?:new |paginate)(\w+?)(?:Command)?\(/g)) {
      if (name === 'TransactWrite') called.add('PutItem').add('UpdateItem');
      else if (['Get', 'Put', 'Update', 'Delete', 'BatchGet'].includes(name as string))
        called.add(`${name}Item`);
      else if (['Scan', 'Query'].includes(name as string)) called.add(name as string);
    }

    // Assess
    expect([...called].sort()).toEqual([
      'BatchGetItem',
      'DeleteItem',
      'GetItem',
      'PutItem',
      'Query',
      'Scan',
      'UpdateItem',
    ]);
    for (const action of called) expect(OPS_TABLE_ACTIONS).toContain(`dynamodb:${action}`);
  });
});
