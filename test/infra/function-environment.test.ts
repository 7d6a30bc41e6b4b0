import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { checkRoleNames } from '../../lambda/postgres/provision-roles.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';

/** The identity of the queues of a worker with the id `Worker` (`queueIdentity`), as first deployed. */
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

/** What the Lambda runtime adds to every function's environment. */
const RUNTIME = { AWS_REGION: 'eu-west-1', AWS_LAMBDA_FUNCTION_NAME: 'fn', LAMBDA_TASK_ROOT: '/var/task' };

/**
 * Each function's environment as the template gives it, with CloudFormation references replaced by a value of
 * the right shape (they resolve at deploy: an address, a port, an ARN, a queue URL).
 */
function environments(worker: SqsInboxWorkerStackProps['worker']) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SqsInboxWorkerStack(app, 'Contract', { worker });
  const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function');
  const resolved = (name: string, value: unknown): string => {
    if (typeof value === 'string') return value;
    if (name.endsWith('_PORT')) return '5432';
    if (name.endsWith('_QUEUE_URL')) return 'https://sqs.eu-west-1.amazonaws.com/123456789012/worker-queue';
    if (name.endsWith('_ARN')) return 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-master';
    return 'worker-db.proxy-abc.eu-west-1.rds.amazonaws.com';
  };
  const byId = (fragment: string): Record<string, string> => {
    const entry = Object.entries(functions).find(([id]) => id.includes(fragment));
    expect(entry, `a function whose logical id contains ${fragment}`).toBeDefined();
    type Definition = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };
    const variables = (entry?.[1] as Definition | undefined)?.Properties.Environment?.Variables;
    return {
      ...RUNTIME,
      ...Object.fromEntries(
        Object.entries(variables ?? {}).map(([name, value]) => [name, resolved(name, value)]),
      ),
    };
  };
  return {
    worker: byId('WorkerFunction'),
    relay: byId('OutboxRelayFunction'),
    migrate: byId('MigrationFunction'),
  };
}

describe.each([
  ['production defaults', { queueIdentity: DEPLOYED_QUEUES, alarms: 'none' }],
  [
    'per-batch, dead-letter policy',
    { queueIdentity: DEPLOYED_QUEUES, alarms: 'none', commitMode: 'per-batch', terminalPolicy: 'dlq' },
  ],
] as const)('Contract: the environment the stack gives each function (%s)', (_name, worker) => {
  const env = environments(worker as SqsInboxWorkerStackProps['worker']);

  it("is accepted by the worker's loadConfig, as its entry point reads it", () => {
    const config = loadConfig(env.worker);
    expect(config.database).toMatchObject({ kind: 'host', auth: 'iam', ssl: true, user: env.worker.DB_USER });
    expect(config.commitMode).toBe(env.worker.WORKER_COMMIT_MODE);
    expect(config.terminalPolicy).toBe(env.worker.WORKER_TERMINAL_POLICY);
  });

  it("is accepted by the outbox relay's loadConfig, with the queue it publishes to", () => {
    const config = loadConfig(env.relay);
    expect(config.outbox.queueUrl).toBe(env.relay.OUTBOX_QUEUE_URL);
    expect(config.database).toMatchObject({ kind: 'host', user: env.relay.DB_USER });
  });

  it('gives the migration function what it reads: the database, its secret and valid, distinct role names', () => {
    for (const name of ['DB_HOST', 'DB_NAME', 'DB_SECRET_ARN'])
      expect(env.migrate[name as 'DB_HOST']).not.toBe('');
    expect(() =>
      checkRoleNames({
        worker: env.migrate.WORKER_DB_USER,
        relay: env.migrate.RELAY_DB_USER,
        ops: env.migrate.OPS_DB_USER,
      }),
    ).not.toThrow();
    // The users the functions log in as are the roles the migration function provisions
    expect([env.worker.DB_USER, env.relay.DB_USER]).toEqual([
      env.migrate.WORKER_DB_USER,
      env.migrate.RELAY_DB_USER,
    ]);
  });
});
