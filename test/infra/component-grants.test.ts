import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { inboxKey, outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';
import { evaluateRole, functionRole, type PolicyRequest, resolveValue, resourceArn } from './role-policy.ts';

// What each deployed component's code sends to AWS, read from the sources, against what its synthesized role
// allows, decided by an IAM policy evaluator: "works locally, AccessDenied in AWS" fails here instead.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const noBundling = { 'aws:cdk:bundling-stacks': [] };
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

/** The IAM actions AWS authorizes an SDK command as (SQS authorizes a batch call as its single action). */
const SDK_ACTIONS: Readonly<Record<string, readonly string[]>> = {
  ReceiveMessageCommand: ['sqs:ReceiveMessage'],
  DeleteMessageBatchCommand: ['sqs:DeleteMessage'],
  ChangeMessageVisibilityBatchCommand: ['sqs:ChangeMessageVisibility'],
  GetQueueAttributesCommand: ['sqs:GetQueueAttributes'],
  GetQueueUrlCommand: ['sqs:GetQueueUrl'],
  SendMessageBatchCommand: ['sqs:SendMessage'],
  // A payloadRef names its object version: GetObject with a VersionId is s3:GetObjectVersion.
  GetObjectCommand: ['s3:GetObject', 's3:GetObjectVersion'],
  PutObjectCommand: ['s3:PutObject'],
  GetEventSourceMappingCommand: ['lambda:GetEventSourceMapping'],
  UpdateEventSourceMappingCommand: ['lambda:UpdateEventSourceMapping'],
  ListTagsCommand: ['lambda:ListTags'],
  TagResourceCommand: ['lambda:TagResource'],
  UntagResourceCommand: ['lambda:UntagResource'],
  GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
  GetMetricDataCommand: ['cloudwatch:GetMetricData'],
  // The document client's commands. A transaction is authorized item by item: the store's own items in it are
  // Updates (the inbox completion, the quarantine); a handler's domain writes are checked in dynamodb-stack.test.ts.
  GetCommand: ['dynamodb:GetItem'],
  GetItemCommand: ['dynamodb:GetItem'],
  PutCommand: ['dynamodb:PutItem'],
  UpdateCommand: ['dynamodb:UpdateItem'],
  TransactWriteCommand: ['dynamodb:UpdateItem'],
  // The stream relay's read-back of a batch's outbox items.
  BatchGetCommand: ['dynamodb:BatchGetItem'],
};

type Component =
  | 'poller'
  | 'dynamodb poller'
  | 'worker'
  | 'dynamodb worker'
  | 'relay'
  | 'dynamodb relay'
  | 'health'
  | 'retention'
  | 'breaker'
  | 'dynamodb breaker'
  | 'migrate';

/**
 * Which deployed components run the code of each file that sends an AWS SDK command; `except` names the commands of
 * the file that none of them sends (with where they are sent instead). Every such file under lambda/ is listed.
 */
const RUN_BY: Readonly<
  Record<string, { readonly by: readonly Component[]; readonly except?: Readonly<Record<string, string>> }>
> = {
  'lambda/runtimes/poller/start-poller.ts': { by: ['poller', 'dynamodb poller'] },
  'lambda/runtimes/poller/settle-messages.ts': { by: ['poller', 'dynamodb poller'] },
  'lambda/runtimes/poller/lease-heartbeat.ts': { by: ['poller', 'dynamodb poller'] },
  // payloadRef reads, in both runtimes and both stores.
  'lambda/payloads/read-payload-object.ts': {
    by: ['worker', 'dynamodb worker', 'poller', 'dynamodb poller'],
  },
  // The Lambda worker's backoff (createWorker); the poller sets visibilities through settle-messages.ts.
  'lambda/sqs/change-visibility.ts': { by: ['worker', 'dynamodb worker'] },
  'lambda/sqs/queue-url.ts': { by: ['worker', 'dynamodb worker'] },
  'lambda/stores/dynamodb/claim-dynamo-inbox.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  'lambda/stores/dynamodb/commit-dynamo-transaction.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  'lambda/stores/dynamodb/complete-dynamo-record.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  'lambda/stores/dynamodb/count-dynamo-duplicate.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  'lambda/stores/dynamodb/dynamo-record-store.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  // A handler's external effects (performDynamoExternalEffect), on EFFECT# items: dynamodb-grant.test.ts.
  'lambda/stores/dynamodb/dynamo-external-effect.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  // The escalation example's read of its case item (CASE#, a domain prefix of the worker's grant).
  'lambda/domain/dynamodb/case-escalation-requested.ts': { by: ['dynamodb worker', 'dynamodb poller'] },
  // The pause's probe: the poller's only (a Lambda worker never probes).
  'lambda/stores/dynamodb/probe-dynamo-store.ts': { by: ['dynamodb poller', 'dynamodb breaker'] },
  'lambda/outbox/send-outbox-rows.ts': { by: ['relay', 'dynamodb relay'] },
  // The DynamoDB store's stream relay: its read-back and marks of OUTBOX# items.
  'lambda/stores/dynamodb/relay-dynamo-outbox.ts': { by: ['dynamodb relay'] },
  // offloadPayload runs in a producer's code, under the role given grantPayloadWrite.
  'lambda/outbox/offload-payload.ts': { by: [] },
  'lambda/breaker/mapping-control.ts': {
    by: ['breaker', 'dynamodb breaker'],
    except: {
      TagResourceCommand:
        "holdMapping: `sqs-worker breaker open`, under the operator's role (docs/operations.md)",
      UntagResourceCommand: "releaseMapping: `sqs-worker breaker close`, under the operator's role",
    },
  },
  // The breaker's control loop of the mapping's MaximumConcurrency reads the worker's metrics.
  'lambda/breaker/fleet-limit.ts': { by: ['breaker', 'dynamodb breaker'] },
  'lambda/handlers/migrate.ts': { by: ['migrate'] },
};

/** The SDK commands each file under lambda/ constructs (comment lines left out), by file. */
function commandsByFile(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const name of readdirSync(join(ROOT, 'lambda'), { recursive: true, encoding: 'utf8' })) {
    if (!name.endsWith('.ts')) continue;
    const code = readFileSync(join(ROOT, 'lambda', name), 'utf8')
      .split('\n')
      .filter((line) => !/^\s*(\*|\/\*\*|\/\/)/.test(line))
      .join('\n');
    const commands = [...code.matchAll(/\bnew (\w+Command)\(/g)].map((match) => match[1] as string);
    if (commands.length > 0) found.set(`lambda/${name}`, [...new Set(commands)].sort());
  }
  return found;
}

/** The IAM actions a component's code needs, derived from the commands its files send. */
function neededActions(component: Component): string[] {
  const actions = new Set<string>();
  for (const [file, commands] of commandsByFile()) {
    const entry = RUN_BY[file];
    if (!entry?.by.includes(component)) continue;
    for (const command of commands) {
      if (entry.except?.[command]) continue;
      for (const action of SDK_ACTIONS[command] ?? []) actions.add(action);
    }
  }
  return [...actions].sort();
}

function synth(id: string, worker: SqsInboxWorkerStackProps['worker']): Template {
  const app = new App({ context: noBundling });
  return Template.fromStack(
    new SqsInboxWorkerStack(app, id, {
      worker: { queueIdentity: DEPLOYED_QUEUES, alarms: 'none', ...worker },
    }),
  );
}

const only = (ids: string[], what: string): string => {
  if (ids.length !== 1) throw new Error(`expected one ${what}, found ${ids.length}`);
  return ids[0] as string;
};

/** The resource a component's call of `action` is made on, in the template of its stack. */
function requestFor(template: Template, action: string, component: Component): PolicyRequest {
  const resources = template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>;
  const [service] = action.split(':');
  if (service === 'sqs') {
    const queue = only(
      Object.keys(
        template.findResources('AWS::SQS::Queue', { Properties: { RedrivePolicy: Match.anyValue() } }),
      ),
      'source queue',
    );
    return { action, resource: resourceArn(template, queue) };
  }
  if (service === 's3') {
    const bucket = only(
      Object.keys(
        template.findResources('AWS::S3::Bucket', {
          Properties: { VersioningConfiguration: { Status: 'Enabled' } },
        }),
      ),
      'payload bucket',
    );
    return { action, resource: `${resourceArn(template, bucket)}/payloads/sha256-0f1e2d` };
  }
  if (service === 'lambda') {
    // The worker's mapping (on the source queue); the DynamoDB relay's reads the table's stream.
    const mapping = only(
      Object.entries(template.findResources('AWS::Lambda::EventSourceMapping'))
        .filter(([, m]) => !JSON.stringify(m.Properties.EventSourceArn).includes('StreamArn'))
        .map(([id]) => id),
      'mapping',
    );
    return { action, resource: `arn:aws:lambda:eu-west-1:123456789012:event-source-mapping:${mapping}` };
  }
  if (service === 'cloudwatch') {
    // GetMetricData has no resource type: AWS authorizes it on "*".
    return { action, resource: '*' };
  }
  if (service === 'secretsmanager') {
    // The secret the migration function is told to read.
    const migration = Object.values(template.findResources('AWS::Lambda::Function')).find((fn) =>
      String(fn.Properties.Description).startsWith('Applies pending migrations'),
    );
    const arn = migration?.Properties.Environment.Variables.DB_SECRET_ARN;
    return { action, resource: String(resolveValue(arn, resources as never)) };
  }
  if (service === 'dynamodb') {
    const table = only(Object.keys(template.findResources('AWS::DynamoDB::Table')), 'table');
    // The store's own calls outside a transaction are on inbox items; the relay's, on outbox items.
    const key =
      component === 'dynamodb relay' ? outboxKey('payment-1').PK : inboxKey('case-worker', 'payment-1').PK;
    return { action, resource: resourceArn(template, table), context: { 'dynamodb:LeadingKeys': [key] } };
  }
  throw new Error(`no resource known for ${action}: add its service to requestFor`);
}

describe('Contract: every AWS call of a component is allowed by its synthesized role', () => {
  let templates: { postgres: Template; fargate: Template; dynamodb: Template; fargateDynamo: Template };
  beforeAll(() => {
    templates = {
      postgres: synth('Grants', {}),
      fargate: synth('GrantsFargate', { runtime: 'fargate' }),
      dynamodb: synth('GrantsDynamo', { store: 'dynamodb' }),
      fargateDynamo: synth('GrantsFargateDynamo', { runtime: 'fargate', store: 'dynamodb' }),
    };
  });

  /** The stack of a component and its role's logical id there. */
  const roleOf = (component: Component): { template: Template; role: string } => {
    const described = (template: Template, description: string) => ({
      template,
      role: functionRole(template, description),
    });
    const taskRole = (template: Template) => {
      const [definition] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
      return { template, role: definition?.Properties.TaskRoleArn['Fn::GetAtt'][0] };
    };
    switch (component) {
      case 'poller':
        return taskRole(templates.fargate);
      case 'dynamodb poller':
        return taskRole(templates.fargateDynamo);
      case 'worker':
        return described(templates.postgres, 'SQS → PostgreSQL inbox worker');
      case 'dynamodb worker':
        return described(templates.dynamodb, 'SQS → DynamoDB inbox worker');
      case 'relay':
        return described(templates.postgres, 'Publishes pending outbox rows');
      case 'dynamodb relay':
        return described(templates.dynamodb, 'Publishes new outbox items');
      case 'health':
        return described(templates.postgres, 'Publishes database health figures');
      case 'retention':
        return described(templates.postgres, 'Purges settled');
      case 'breaker':
        return described(templates.postgres, 'Disables the worker event source mapping');
      case 'dynamodb breaker':
        return described(templates.dynamodb, 'Disables the worker event source mapping while DynamoDB');
      case 'migrate':
        return described(templates.postgres, 'Applies pending migrations');
    }
  };

  it('knows who runs every file under lambda/ that sends an AWS SDK command, and the IAM actions of each command', () => {
    // Act
    const found = commandsByFile();

    // Assess: a new call site must say which components run it; a new command, what AWS authorizes it as.
    expect([...found.keys()].sort()).toEqual(Object.keys(RUN_BY).sort());
    expect([...new Set([...found.values()].flat())].filter((command) => !SDK_ACTIONS[command])).toEqual([]);
    expect(found.get('lambda/runtimes/poller/start-poller.ts')).toEqual(
      expect.arrayContaining(['GetQueueAttributesCommand', 'ReceiveMessageCommand']),
    );
  });

  it.each([
    'poller',
    'dynamodb poller',
    'worker',
    'dynamodb worker',
    'relay',
    'dynamodb relay',
    'health',
    'retention',
    'breaker',
    'dynamodb breaker',
    'migrate',
  ] as const)(
    "the %s's role allows every action its code sends, on the resource it sends it to",
    async (component) => {
      // Prepare
      const { template, role } = roleOf(component);
      const needed = neededActions(component);

      // Act
      const decided = await Promise.all(
        needed.map(async (action) => {
          const request = requestFor(template, action, component);
          return { action, resource: request.resource, result: await evaluateRole(template, role, request) };
        }),
      );

      // Assess
      expect(decided.filter(({ result }) => result !== 'Allowed')).toEqual([]);
      // The scheduled database jobs call no AWS API; every other component does.
      expect(needed.length > 0).toBe(component !== 'health' && component !== 'retention');
    },
  );
});
