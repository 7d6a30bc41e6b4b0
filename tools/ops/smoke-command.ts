import type { AlarmTopicTarget } from './check-alarm-topic.ts';
import type { BreakerTarget } from './check-breaker-closed.ts';
import { UsageError } from './errors.ts';
import type { OpsFlags, OpsSettings } from './ops-settings.ts';
import { readStage, type StageFacts } from './read-stage.ts';
import type { OpsSession } from './run-ops-command.ts';
import { type SmokeResult, smoke } from './smoke.ts';
import { readStackOutputs, type StackReader } from './stack-outputs.ts';

/** What `sqs-worker smoke` is run against: the stage, and its settings from flags, variables and stack outputs. */
export interface SmokeTarget {
  readonly stage: StageFacts;
  /** A local SQS endpoint is set: the local stack (`npm start -- --keep`), no AWS control plane. */
  readonly local: boolean;
  readonly queueUrl: string;
  readonly dlqUrl: string | undefined;
  readonly consumer: string;
  readonly store: 'postgres' | 'dynamodb';
  readonly mappingUuid: string | undefined;
  readonly alarmTopicArn: string | undefined;
  readonly proxyName: string | undefined;
  readonly dynamodbTable: string | undefined;
  readonly workerDbUser: string;
}

/** Options of `sqs-worker smoke` beyond the global settings. */
export interface SmokeCommandOptions {
  readonly stage: string;
  readonly timeoutSeconds: number;
  readonly skipDlq: boolean;
  readonly alarmTopicArn?: string | undefined;
  readonly proxyName?: string | undefined;
  readonly workerDbUser?: string | undefined;
  /** The global flags as given (to tell a given consumer or store from a default). */
  readonly flags: OpsFlags;
  /** @default process.env */
  readonly env?: Record<string, string | undefined>;
  /** @default ./cdk.json */
  readonly cdkJsonPath?: string;
}

/**
 * The settings of a smoke run, each from the first place that has it: its flag, its variable (`WORKER_QUEUE_URL`,
 * …), the stack's outputs (AWS only), the stage in cdk.json, the construct's default.
 *
 * @throws UsageError when the queue URL is nowhere, or `WORKER_STORE` names another store than the stage's.
 * @internal
 */
export function resolveSmokeTarget(input: {
  readonly stage: StageFacts;
  readonly settings: OpsSettings;
  readonly flags: OpsFlags;
  readonly env: Record<string, string | undefined>;
  readonly outputs: Readonly<Record<string, string>>;
  readonly options: Pick<SmokeCommandOptions, 'alarmTopicArn' | 'proxyName' | 'workerDbUser'>;
}): SmokeTarget {
  const { stage, settings, flags, env, outputs } = input;
  const givenStore = flags.store || env.WORKER_STORE || undefined;
  if (givenStore && givenStore !== stage.store) {
    throw new UsageError(
      `Stage ${stage.name} is a ${stage.store} stage, but --store / WORKER_STORE is "${givenStore}": pass the stage of that store, or unset WORKER_STORE`,
    );
  }
  const local = settings.sqsEndpoint !== undefined;
  const queueUrl = settings.queueUrl ?? outputs.QueueUrl;
  if (!queueUrl) {
    throw new UsageError(
      local
        ? 'Missing setting for "smoke": the URL of the source (worker) queue. Pass --queue-url <value> or set WORKER_QUEUE_URL (npm start -- --keep prints it).'
        : `Missing setting for "smoke": stack ${stage.stackName} has no QueueUrl output; pass --queue-url <value> or set WORKER_QUEUE_URL.`,
    );
  }
  // The proxy's name is the first label of its endpoint (<name>.proxy-<id>.<region>.rds.amazonaws.com).
  const proxyFromEndpoint = outputs.ProxyEndpoint?.split('.')[0];
  return {
    stage,
    local,
    queueUrl,
    dlqUrl: settings.dlqUrl ?? outputs.DeadLetterQueueUrl,
    consumer: flags.consumer || env.WORKER_CONSUMER || stage.consumer || 'case-worker',
    store: stage.store,
    mappingUuid: settings.mappingUuid ?? outputs.EventSourceMappingUuid,
    alarmTopicArn: input.options.alarmTopicArn ?? outputs.AlarmTopicArn,
    proxyName: input.options.proxyName ?? outputs.ProxyName ?? proxyFromEndpoint,
    dynamodbTable: settings.dynamodbTable ?? outputs.TableName,
    workerDbUser: input.options.workerDbUser ?? stage.workerDbUser,
  };
}

/**
 * `sqs-worker smoke --stage <stage>`: resolves the target ({@link resolveSmokeTarget}; in AWS the stack outputs of
 * `SqsInboxWorker-<stage>` by CloudFormation DescribeStacks), opens the stage's store and the clients it needs and
 * runs {@link smoke}.
 * Against a local SQS endpoint no AWS control plane is called: SNS, Lambda and CloudWatch checks are SKIPs there.
 */
export async function smokeCommand(session: OpsSession, options: SmokeCommandOptions): Promise<SmokeResult> {
  const env = options.env ?? process.env;
  const stage = readStage(options.stage, options.cdkJsonPath);
  const local = session.settings.sqsEndpoint !== undefined;
  const region = session.settings.region ? { region: session.settings.region } : {};
  const opened: { destroy(): void }[] = [];
  try {
    let outputs: Readonly<Record<string, string>> = {};
    if (!local) {
      const { CloudFormationClient } = await import('@aws-sdk/client-cloudformation');
      const cloudFormation: StackReader & { destroy(): void } = new CloudFormationClient(region);
      opened.push(cloudFormation);
      outputs = await readStackOutputs(cloudFormation, stage.stackName);
    }
    const target = resolveSmokeTarget({
      stage,
      settings: session.settings,
      flags: options.flags,
      env,
      outputs,
      options,
    });
    const alarmTopic: AlarmTopicTarget = target.local
      ? { kind: 'local' }
      : stage.alarmsNone
        ? { kind: 'none-on-purpose', stage: stage.name }
        : await (async () => {
            const { SNSClient } = await import('@aws-sdk/client-sns');
            const sns = new SNSClient(region);
            opened.push(sns);
            return { kind: 'aws' as const, topicArn: target.alarmTopicArn, sns };
          })();
    const breaker: BreakerTarget =
      stage.runtime === 'fargate'
        ? {
            kind: 'skip',
            reason: 'runtime fargate: no event source mapping (the poller pauses by itself: docs/poller.md)',
          }
        : target.local
          ? {
              kind: 'skip',
              reason: 'local stack: no Lambda API (the local event source mapping runs inside npm start)',
            }
          : { kind: 'mapping', mappingUuid: target.mappingUuid, lambda: session.lambda() };
    // The stage's store, with its table from the flag, the variable or the stack's outputs.
    const { canaries, sql } = session
      .openStore({ store: target.store, dynamodbTable: target.dynamodbTable })
      .smokeStore(target.consumer);
    // The database's proxy is watched in AWS; locally the worker's sessions are sampled instead.
    const cloudWatch = sql && !target.local ? session.cloudWatch() : undefined;
    return await smoke(
      {
        sqs: session.sqs(),
        out: session.out,
        clock: session.clock,
        store: canaries,
        ...(sql ? { sql } : {}),
        alarmTopic,
        breaker,
        ...(cloudWatch ? { proxyMetrics: { proxyName: target.proxyName, cloudWatch } } : {}),
      },
      {
        stage: stage.name,
        consumer: target.consumer,
        queueUrl: target.queueUrl,
        dlqUrl: target.dlqUrl,
        local: target.local,
        timeoutMs: options.timeoutSeconds * 1000,
        skipDlq: options.skipDlq,
        workerDbUser: target.workerDbUser,
        terminalPolicy: stage.terminalPolicy,
      },
    );
  } finally {
    for (const client of opened) client.destroy();
  }
}
