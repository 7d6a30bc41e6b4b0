import { readFileSync } from 'node:fs';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Capture, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveWorkerSettings } from '../../lib/resolve-worker-settings.ts';
import { SqsDatabaseWorker } from '../../lib/sqs-database-worker.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';
import {
  RELAY_TABLE_ACTIONS,
  WORKER_ITEM_ACTIONS,
  WORKER_TABLE_ACTIONS,
} from '../../lib/stores/dynamodb/worker-table.ts';
import { WorkerNetwork } from '../../lib/worker-network.ts';

// Bundling is skipped (`aws:cdk:bundling-stacks: []`): the settings still reach the template.
const noBundling = { 'aws:cdk:bundling-stacks': [] };

/** The identity of the queues of a worker with the id `Worker`, as first deployed (see worker-stack.test.ts). */
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

function synth(id: string, worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const stack = new SqsInboxWorkerStack(app, id, {
    worker: { store: 'dynamodb', alarms: 'none', ...worker },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

/** cdk-nag AwsSolutions findings of the app, as "rule: paths" lines. */
function nagFindings(app: App): string[] {
  const report = new AwsSolutionsChecks(app).validateScope(app);
  return report.violations.map(
    (v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
  );
}

const onlyId = (resources: Record<string, unknown>, what: string): string => {
  const ids = Object.keys(resources);
  expect(ids, what).toHaveLength(1);
  return ids[0] as string;
};

describe('Class: SqsInboxWorkerStack (store dynamodb, production)', () => {
  let app: App;
  let stack: SqsInboxWorkerStack;
  let template: Template;
  let tableId: string;
  let workerId: string;
  beforeAll(() => {
    ({ app, stack, template } = synth('Dynamo', { queueIdentity: DEPLOYED_QUEUES }));
    tableId = onlyId(template.findResources('AWS::DynamoDB::Table'), 'one table');
    workerId = onlyId(
      template.findResources('AWS::Lambda::Function', {
        Properties: { Description: Match.stringLikeRegexp('DynamoDB inbox worker') },
      }),
      'one worker function',
    );
  });

  it('synthesizes with no error annotations and names the write budget as the binding constraint', () => {
    Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
    Annotations.fromStack(stack).hasInfo(
      '/Dynamo/Worker',
      Match.stringLikeRegexp(
        '^safe worker concurrency 12, bound by write_units \\(max_write_units_per_second 4000 / \\(write_units_per_message 5 × .*maxConcurrency 12 \\(derived\\).*store dynamodb',
      ),
    );
  });

  it('passes cdk-nag AwsSolutions with zero unacknowledged findings', () => {
    expect(nagFindings(app)).toEqual([]);
  });

  it('creates an on-demand table keyed PK/SK with TTL on ttl, point-in-time recovery and encryption at rest', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'PK', AttributeType: 'S' },
        { AttributeName: 'SK', AttributeType: 'S' },
      ],
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 14 },
      // The AWS managed key (aws/dynamodb): SSE on, no key of our own.
      SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() },
      ProvisionedThroughput: Match.absent(),
      GlobalSecondaryIndexes: Match.absent(),
    });
  });

  it('keeps the table when removed or replaced and protects it from deletion, like the queues', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
    for (const queue of Object.values(template.findResources('AWS::SQS::Queue'))) {
      expect(queue).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    }
  });

  it('grants the worker exactly the store actions on the table ARN, each scoped to its items, and nothing of DynamoDB to anyone else', () => {
    // Prepare: every policy statement of the template that names a DynamoDB action
    type Statement = { Sid?: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
    const roleRef = new Capture();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('DynamoDB inbox worker'),
      Role: { 'Fn::GetAtt': [roleRef, 'Arn'] },
    });
    const dynamoStatements: Array<{ roles: unknown; statement: Statement }> = [];
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
      for (const statement of policy.Properties.PolicyDocument.Statement as Statement[]) {
        const actions = ([] as string[]).concat(statement.Action);
        if (actions.some((action) => action.startsWith('dynamodb:'))) {
          dynamoStatements.push({ roles: policy.Properties.Roles, statement });
        }
      }
    }

    // Assess: the worker's role, one statement per kind of item (dynamodb-grant.test.ts evaluates them), the table's
    // ARN only, every one conditioned on the partition key…
    const workerRole = [{ Ref: roleRef.asString() }];
    const ofWorker = dynamoStatements.filter(
      ({ roles }) => JSON.stringify(roles) === JSON.stringify(workerRole),
    );
    expect(ofWorker.map(({ statement }) => [statement.Sid, statement.Action])).toEqual([
      ['WorkerInboxItems', [...WORKER_ITEM_ACTIONS.inbox]],
      ['WorkerQuarantineItems', WORKER_ITEM_ACTIONS.quarantine[0]],
      ['WorkerEffectLogItems', [...WORKER_ITEM_ACTIONS.effects]],
      ['WorkerOutboxItems', WORKER_ITEM_ACTIONS.outbox[0]],
      ['HandlerDomainItems', [...WORKER_ITEM_ACTIONS.domain]],
    ]);
    expect(new Set(ofWorker.flatMap(({ statement }) => statement.Action))).toEqual(
      new Set(WORKER_TABLE_ACTIONS),
    );
    for (const { statement } of ofWorker) {
      expect(statement.Resource).toEqual({ 'Fn::GetAtt': [tableId, 'Arn'] });
      expect(statement.Condition).toEqual({
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': expect.any(Array) },
      });
    }
    // …and the stream relay's role: its stream (ListStreams has no resource-level permission) and outbox items only.
    const roleOfFunction = (description: string) => {
      const ref = new Capture();
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp(description),
        Role: { 'Fn::GetAtt': [ref, 'Arn'] },
      });
      return JSON.stringify([{ Ref: ref.asString() }]);
    };
    const ofRole = (role: string) =>
      dynamoStatements
        .filter(({ roles }) => JSON.stringify(roles) === role)
        .map(({ statement }) => [statement.Action, statement.Resource, statement.Condition]);
    expect(ofRole(roleOfFunction('Publishes new outbox items'))).toEqual([
      ['dynamodb:ListStreams', '*', undefined],
      [
        ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        { 'Fn::GetAtt': [tableId, 'StreamArn'] },
        undefined,
      ],
      [
        [...RELAY_TABLE_ACTIONS],
        { 'Fn::GetAtt': [tableId, 'Arn'] },
        { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['OUTBOX#*'] } },
      ],
    ]);
    // …and the health job's: a Scan of the table (no partition key to condition on), nothing else.
    const healthRole = roleOfFunction('Publishes DynamoDB store health figures');
    expect(ofRole(healthRole)).toEqual([['dynamodb:Scan', { 'Fn::GetAtt': [tableId, 'Arn'] }, undefined]]);
    // …and the breaker's: its probe, a GetItem of inbox items.
    const breakerRole = roleOfFunction('while DynamoDB does not answer');
    expect(ofRole(breakerRole)).toEqual([
      [
        'dynamodb:GetItem',
        { 'Fn::GetAtt': [tableId, 'Arn'] },
        { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['IDEMP#*'] } },
      ],
    ]);
    // Nobody else holds a DynamoDB grant.
    expect(
      dynamoStatements.length -
        ofWorker.length -
        ofRole(roleOfFunction('Publishes new outbox items')).length -
        ofRole(healthRole).length -
        ofRole(breakerRole).length,
    ).toBe(0);
    // No KMS grant is needed with the AWS managed key, and none is given.
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).not.toMatch(/"kms:/);
  });

  it('builds no VPC, NAT, endpoint, RDS, proxy, secret or migration resources; the worker runs outside a VPC', () => {
    for (const type of [
      'AWS::EC2::VPC',
      'AWS::EC2::Subnet',
      'AWS::EC2::NatGateway',
      'AWS::EC2::VPCEndpoint',
      'AWS::EC2::SecurityGroup',
      'AWS::EC2::FlowLog',
      'AWS::RDS::DBInstance',
      'AWS::RDS::DBProxy',
      'AWS::RDS::DBSubnetGroup',
      'AWS::SecretsManager::Secret',
      'AWS::SecretsManager::RotationSchedule',
      'Custom::Trigger',
    ]) {
      template.resourceCountIs(type, 0);
    }
    const functions = template.findResources('AWS::Lambda::Function');
    // The worker, the outbox relay on the table's stream, the health job and the breaker, all outside a VPC.
    expect(Object.keys(functions)).toEqual([
      workerId,
      expect.stringMatching(/^WorkerOutboxRelayFunction/),
      expect.stringMatching(/^WorkerHealthFunction/),
      expect.stringMatching(/^WorkerBreakerFunction/),
    ]);
    for (const fn of Object.values(functions)) expect(fn.Properties.VpcConfig).toBeUndefined();
    // The worker role carries the basic execution policy, not the VPC-access one.
    expect(JSON.stringify(template.findResources('AWS::IAM::Role'))).not.toContain(
      'AWSLambdaVPCAccessExecutionRole',
    );
  });

  it("gives the worker WORKER_STORE=dynamodb, the table name and the queues' retentions (the inbox TTL), and no database variables", () => {
    // Act
    const variables = template.findResources('AWS::Lambda::Function')[workerId]?.Properties.Environment
      .Variables as Record<string, unknown>;

    // Assess
    expect(variables).toMatchObject({
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: { Ref: tableId },
      WORKER_CONSUMER: 'case-worker',
      WORKER_RECORD_CONCURRENCY: '1',
      POWERTOOLS_SERVICE_NAME: 'sqs-inbox-worker',
    });
    // The inbox items' TTL window: the queue's and the DLQ's retention, as the queues are declared.
    const queues = Object.values(template.findResources('AWS::SQS::Queue')).map((queue) =>
      String(queue.Properties.MessageRetentionPeriod),
    );
    expect(queues).toContain(variables.RETENTION_SOURCE_SECONDS);
    expect(queues).toContain(variables.RETENTION_DLQ_SECONDS);
    expect(Number(variables.RETENTION_DLQ_SECONDS)).toBeGreaterThan(
      Number(variables.RETENTION_SOURCE_SECONDS),
    );
    for (const name of ['DB_HOST', 'DB_PORT', 'DB_USER', 'DB_AUTH', 'DB_POOL_SIZE', 'DATABASE_URL']) {
      expect(variables, name).not.toHaveProperty(name);
    }
  });

  it('caps the event source and the reserved concurrency at the concurrency the write budget carries', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 12 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('DynamoDB inbox worker'),
      ReservedConcurrentExecutions: 12,
    });
  });

  it('alarms on throttled requests, system errors and the transaction conflict rate of the table', () => {
    // Prepare
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const byName = (fragment: string) => {
      const entry = Object.entries(alarms).find(([id]) => id.includes(fragment));
      expect(entry, `an alarm whose logical id contains ${fragment}`).toBeDefined();
      return JSON.stringify(entry?.[1]);
    };

    // Assess: each watches the table by name, for each operation the worker calls
    const throttles = byName('DynamoDbThrottles');
    for (const operation of ['GetItem', 'PutItem', 'UpdateItem', 'TransactWriteItems', 'Query']) {
      expect(throttles).toContain(`"Name":"Operation","Value":"${operation}"`);
    }
    expect(throttles).toContain('"MetricName":"ThrottledRequests"');
    expect(throttles).toContain(`{"Name":"TableName","Value":{"Ref":"${tableId}"}}`);
    expect(byName('DynamoDbSystemErrors')).toContain('"MetricName":"SystemErrors"');
    const conflicts = byName('DynamoDbTransactionConflicts');
    expect(conflicts).toContain('"MetricName":"TransactionConflict"');
    expect(conflicts).toContain('"Threshold":5');
  });

  it('alarms on consumed write units nearing the write budget and the per-table write limit, before any throttle', () => {
    // Prepare
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const alarm = (fragment: string) => {
      const entry = Object.entries(alarms).find(([id]) => id.includes(fragment));
      expect(entry, `an alarm whose logical id contains ${fragment}`).toBeDefined();
      return entry?.[1] as { Properties: Record<string, unknown> };
    };

    // Assess: the budget's alarm divides by the budget the concurrency came from; the limit's by the account metric.
    const budget = alarm('DynamoDbWriteBudget').Properties;
    const budgetText = JSON.stringify(budget);
    expect(budget).toMatchObject({ Threshold: 80, EvaluationPeriods: 5 });
    expect(budgetText).toContain('100 * FILL(writes, 0) / 4000'); // this stack's maxWriteUnitsPerSecond
    expect(budgetText).toContain('"MetricName":"ConsumedWriteCapacityUnits"');
    expect(budgetText).toContain(`{"Name":"TableName","Value":{"Ref":"${tableId}"}}`);
    const limit = alarm('DynamoDbTableWriteLimit').Properties;
    const limitText = JSON.stringify(limit);
    expect(limit).toMatchObject({ Threshold: 80, EvaluationPeriods: 3, TreatMissingData: 'notBreaching' });
    expect(limitText).toContain('"MetricName":"AccountMaxTableLevelWrites"');
    expect(limitText).toContain('"MetricName":"ConsumedWriteCapacityUnits"');
  });

  it("lets its breaker steer the mapping's MaximumConcurrency too: the settings, GetMetricData, the floor alarm", () => {
    // Prepare
    const [breaker] = Object.values(
      template.findResources('AWS::Lambda::Function', {
        Properties: { Description: Match.stringLikeRegexp('while DynamoDB does not answer') },
      }),
    );
    const roleId = breaker?.Properties.Role['Fn::GetAtt'][0] as string;
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);

    // Assess
    expect(breaker?.Properties.Environment.Variables).toMatchObject({
      CONCURRENCY_ADAPTIVE: 'true',
      CONCURRENCY_FLOOR: '2',
      CONCURRENCY_WINDOW_SECONDS: '60',
      CONCURRENCY_METRICS_NAMESPACE: 'SqsInboxWorker',
      CONCURRENCY_METRICS_SERVICE: 'sqs-inbox-worker',
    });
    expect(statements).toContainEqual({
      Sid: 'ReadTheWorkerMetrics',
      Effect: 'Allow',
      Action: 'cloudwatch:GetMetricData',
      Resource: '*',
    });
    expect(stack.worker.alarms).toHaveProperty('ConcurrencyAtFloor');
  });

  it('has no database connection, lock or retention alarms; the health job, relay and breaker alarms of its own', () => {
    const alarms = JSON.stringify(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).not.toContain('AWS/RDS');
    const ids = Object.keys(template.findResources('AWS::CloudWatch::Alarm'));
    for (const postgresOnly of [
      'ProxyClientConnections',
      'ProxyDatabaseConnections',
      'DatabaseConnections',
      'LockWaits',
      'Deadlocks',
      'RetentionJob',
      'OutboxOldestPendingAge',
    ]) {
      expect(
        ids.filter((id) => id.includes(postgresOnly)),
        postgresOnly,
      ).toEqual([]);
    }
    // The health job's (quarantine age, in-flight age, the job itself) and the stream relay's.
    for (const alarm of [
      'QuarantineAge',
      'InFlightAge',
      'HealthJobErrors',
      'HealthJobNotRunning',
      'OutboxRelayErrors',
      'OutboxRelayIteratorAge',
      'OutboxRelayGaveUp',
      'BreakerOpened',
    ]) {
      expect(
        ids.some((id) => id.includes(alarm)),
        alarm,
      ).toBe(true);
    }
    // The queue and function alarms stay.
    expect(ids.some((id) => id.includes('DlqNotEmpty'))).toBe(true);
    expect(ids.some((id) => id.includes('FunctionThrottles'))).toBe(true);
  });

  it('draws the consumed write units against the write budget on the dashboard, and no RDS widgets', () => {
    // Act
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));

    // Assess
    expect(body).toContain('DynamoDB: consumed write units per second');
    expect(body).toContain('ConsumedWriteCapacityUnits');
    expect(body).toContain('write budget (maxWriteUnitsPerSecond)');
    expect(body).toContain('TransactionConflict');
    expect(body).toContain('Duplicates: redelivery or resend; receive count (max, avg)');
    expect(body).not.toContain('RDS');
  });

  it('outputs the table name instead of the proxy endpoint', () => {
    template.hasOutput('TableName', { Value: { Ref: tableId } });
    expect(Object.keys(template.findOutputs('ProxyEndpoint'))).toEqual([]);
  });
});

describe('Class: SqsInboxWorkerStack (store dynamodb, non-production, stated budget)', () => {
  it('deletes an unprotected table with the stack, keeps a day of PITR, and derives capacity from the stated budget', () => {
    // Act: 20000 WCU/s, 3 transaction items (7 WCU), 2 records at 20 ms (100 messages/s): 20000 / 700 = 28
    const { app, stack, template } = synth('DynamoDev', {
      production: false,
      maxWriteUnitsPerSecond: 20_000,
      transactItemsPerMessage: 3,
      recordConcurrency: 2,
      recordLatencyMs: 20,
      reserveConcurrency: false,
    });

    // Assess
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      UpdateReplacePolicy: 'Delete',
      Properties: Match.objectLike({
        DeletionProtectionEnabled: false,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 1 },
      }),
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 28 },
    });
    Annotations.fromStack(stack).hasInfo(
      '/DynamoDev/Worker',
      Match.stringLikeRegexp('^safe worker concurrency 28, bound by write_units'),
    );
    expect(nagFindings(app)).toEqual([]);
  });
});

describe('Stage dev-dynamodb of cdk.json', () => {
  it('synthesizes a DynamoDB worker without a VPC or a database, cdk-nag clean', () => {
    // Prepare: the stage as bin/app.ts reads it
    const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
      context: { stages: Record<string, unknown> };
    };
    const app = new App({ context: { ...noBundling, stage: 'dev-dynamodb' } });

    // Act
    const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-dev-dynamodb', {
      worker: stageSettings('dev-dynamodb', cdkJson.context.stages['dev-dynamodb']),
    });
    const template = Template.fromStack(stack);

    // Assess
    expect(stack.network).toBeUndefined();
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.resourceCountIs('AWS::EC2::VPC', 0);
    template.resourceCountIs('AWS::RDS::DBInstance', 0);
    Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
    expect(nagFindings(app)).toEqual([]);
  });

  it('reads store and the DynamoDB capacity settings, refusing a mistyped one', () => {
    expect(
      stageSettings('x', { store: 'dynamodb', maxWriteUnitsPerSecond: 1000, recordLatencyMs: 10 }),
    ).toEqual({ store: 'dynamodb', maxWriteUnitsPerSecond: 1000, recordLatencyMs: 10 });
    expect(() => stageSettings('x', { maxWriteUnitsPerSecond: '1000' })).toThrow(
      'stages.x.maxWriteUnitsPerSecond must be a number (given "1000")',
    );
  });
});

describe('Function: resolveWorkerSettings() (store dynamodb)', () => {
  it('turns the retention job off, keeps the breaker, and leaves recordConcurrency free of the pool size', () => {
    // Act
    const settings = resolveWorkerSettings({ store: 'dynamodb', alarms: 'none', recordConcurrency: 4 });

    // Assess: 4000 × 15 / (5 × 4 × 1000) = 3
    expect(settings).toMatchObject({
      store: 'dynamodb',
      recordConcurrency: 4,
      maxConcurrency: 3,
      retention: undefined,
      breaker: { failureThreshold: 2, halfOpenConcurrency: 2 },
    });
    expect(settings.capacity?.binding).toBe('write_units');
  });

  it('refuses a write budget that cannot carry the event source minimum, naming the figures and the fix', () => {
    expect(() =>
      resolveWorkerSettings({ store: 'dynamodb', alarms: 'none', maxWriteUnitsPerSecond: 500 }),
    ).toThrow(
      'the safe worker concurrency is 1 (safe worker concurrency 1, bound by write_units (max_write_units_per_second 500 / (write_units_per_message 5 × messages_per_second_per_worker 66.67))), below the event source minimum of 2; raise maxWriteUnitsPerSecond',
    );
  });

  it('refuses a maxConcurrency above what the write budget carries', () => {
    expect(() => resolveWorkerSettings({ store: 'dynamodb', alarms: 'none', maxConcurrency: 50 })).toThrow(
      'maxConcurrency (50) exceeds the safe worker concurrency: safe worker concurrency 12, bound by write_units',
    );
  });

  it('refuses every PostgreSQL prop and function with DynamoDB, one problem each, naming the value', () => {
    // Act
    const resolve = () =>
      resolveWorkerSettings({
        store: 'dynamodb',
        alarms: 'none',
        dbPoolSize: 2,
        dbMaxConnections: 400,
        inboxRetention: Duration.days(20),
        outboxRelaySchedule: Duration.minutes(2),
        retention: true,
        transactItemsPerMessage: 101,
      });

    // Assess
    let problems: readonly string[] = [];
    try {
      resolve();
    } catch (error) {
      problems = (error as { problems: readonly string[] }).problems;
    }
    expect(problems).toEqual(
      expect.arrayContaining([
        'dbPoolSize (2) applies only to store "postgres" (given store "dynamodb"); remove dbPoolSize',
        'dbMaxConnections (400) applies only to store "postgres" (given store "dynamodb"); remove dbMaxConnections',
        'inboxRetention (20 days) applies only to store "postgres" (given store "dynamodb"); remove inboxRetention',
        'outboxRelaySchedule (2 minutes) applies only to store "postgres" (given store "dynamodb"); remove outboxRelaySchedule',
        'retention (true) needs store "postgres": the DynamoDB table\'s TTL (attribute `ttl`) removes settled items instead of the retention job; remove retention or set it false',
        'Capacity input transactItemsPerMessage must be a whole number from 1 to 100, the TransactWriteItems limit (given 101); fix the capacity props',
      ]),
    );
  });

  it("refuses domain key prefixes that overlap the toolkit's own items or hold IAM wildcards, naming each", () => {
    // Act
    let problems: readonly string[] = [];
    try {
      resolveWorkerSettings({
        store: 'dynamodb',
        alarms: 'none',
        domainKeyPrefixes: ['ORDER#', 'I', 'AUDIT#x', 'CASE*', ''],
      });
    } catch (error) {
      problems = (error as { problems: readonly string[] }).problems;
    }

    // Assess: "I" would match IDEMP#*: the worker could delete inbox items
    expect(problems).toEqual([
      'domainKeyPrefixes entry "I" overlaps the toolkit\'s own items (IDEMP#…): the worker could overwrite or delete them; give a prefix of your domain\'s own, such as "ORDER#"',
      'domainKeyPrefixes entry "AUDIT#x" overlaps the toolkit\'s own items (AUDIT#…): the worker could overwrite or delete them; give a prefix of your domain\'s own, such as "ORDER#"',
      'domainKeyPrefixes entry "CASE*" must be a non-empty prefix without * or ? (IAM wildcards); give the start of your partition keys, such as "ORDER#"',
      'domainKeyPrefixes entry "" must be a non-empty prefix without * or ? (IAM wildcards); give the start of your partition keys, such as "ORDER#"',
    ]);
  });

  it('names the DynamoDB wiring when a workerEntry of store "dynamodb" is not a file', () => {
    // Act
    const act = () =>
      resolveWorkerSettings({
        store: 'dynamodb',
        alarms: 'none',
        workerEntry: 'lambda/handlers/order-wroker.ts',
        domainKeyPrefixes: ['ORDER#'],
      });

    // Assess
    expect(act).toThrow(
      /workerEntry \("lambda\/handlers\/order-wroker\.ts"\) is not a file .*it exports `handler = createDynamoWorkerFromConfig\(\{ handlers \}\)`/,
    );
  });

  it('asks a worker of your own (workerEntry) for its domain key prefixes, and refuses them with PostgreSQL', () => {
    const entry = 'test/fixtures/first-handler/invoice-worker.ts';
    expect(() => resolveWorkerSettings({ store: 'dynamodb', alarms: 'none', workerEntry: entry })).toThrow(
      `workerEntry ("${entry}") runs your own handlers with store "dynamodb": set domainKeyPrefixes to the partition key prefixes they write (for example ["ORDER#"]; [] if they write no item), or the worker's role refuses their writes`,
    );
    expect(() =>
      resolveWorkerSettings({
        store: 'dynamodb',
        alarms: 'none',
        workerEntry: entry,
        domainKeyPrefixes: ['INVOICE#'],
      }),
    ).not.toThrow();
    expect(() => resolveWorkerSettings({ alarms: 'none', domainKeyPrefixes: ['ORDER#'] })).toThrow(
      'domainKeyPrefixes (given) applies only to store "dynamodb" (given store "postgres"); remove domainKeyPrefixes or set store "dynamodb"',
    );
    expect(stageSettings('x', { domainKeyPrefixes: ['ORDER#'] })).toEqual({ domainKeyPrefixes: ['ORDER#'] });
    expect(() => stageSettings('x', { domainKeyPrefixes: 'ORDER#' })).toThrow(
      'stages.x.domainKeyPrefixes must be a list of strings like ["ORDER#"] (given "ORDER#")',
    );
  });

  it('refuses DynamoDB props with PostgreSQL, an unknown store, and a PITR window DynamoDB does not keep', () => {
    expect(() => resolveWorkerSettings({ alarms: 'none', maxWriteUnitsPerSecond: 1000 })).toThrow(
      'maxWriteUnitsPerSecond (1000) applies only to store "dynamodb" (given store "postgres"); remove maxWriteUnitsPerSecond or set store "dynamodb"',
    );
    expect(() => resolveWorkerSettings({ alarms: 'none', store: 'mysql' as unknown as 'postgres' })).toThrow(
      'store ("mysql") must be "postgres" or "dynamodb"; set one of them',
    );
    expect(() =>
      resolveWorkerSettings({ store: 'dynamodb', alarms: 'none', backupRetention: Duration.days(36) }),
    ).toThrow(
      'backupRetention (36 days) is the table\'s point-in-time recovery window with store "dynamodb": whole days from 1 to 35',
    );
  });
});

describe('Class: SqsDatabaseWorker (store and VPC)', () => {
  it('refuses a VPC with DynamoDB and requires one with PostgreSQL, before creating anything', () => {
    // Prepare
    const stack = new Stack(new App({ context: noBundling }), 'Bare');
    const network = new WorkerNetwork(stack, 'Network');

    // Act
    const withVpc = () =>
      new SqsDatabaseWorker(stack, 'DynamoWithVpc', {
        store: { kind: 'dynamodb' },
        alarms: 'none',
        vpc: network.vpc,
      });
    const withoutVpc = () => new SqsDatabaseWorker(stack, 'PostgresWithoutVpc', { alarms: 'none' });

    // Assess
    expect(withVpc).toThrow('vpc is given with store "dynamodb", whose worker runs outside a VPC');
    expect(withoutVpc).toThrow('vpc is required with store "postgres"');
    expect(stack.node.tryFindChild('DynamoWithVpc')).toBeUndefined();
    expect(stack.node.tryFindChild('PostgresWithoutVpc')).toBeUndefined();
  });
});
