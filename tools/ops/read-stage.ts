import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from './errors.ts';

/** What the ops CLI needs to know of a stage of `cdk.json` (its other settings shape the stack, not the checks). */
export interface StageFacts {
  readonly name: string;
  /** The stack `bin/app.ts` deploys for it: `SqsInboxWorker-<stage>`. */
  readonly stackName: string;
  readonly store: 'postgres' | 'dynamodb';
  readonly runtime: 'lambda' | 'fargate';
  /** `consumer`, when the stage sets it (the construct's default is case-worker). */
  readonly consumer: string | undefined;
  /** `workerDbUser`, or the construct's default `sqs_worker`. */
  readonly workerDbUser: string;
  /** `alarms: 'none'`: nobody is subscribed to the alarm topic, on purpose. */
  readonly alarmsNone: boolean;
  readonly terminalPolicy: 'quarantine' | 'dlq';
}

/**
 * Reads a stage of `cdk.json` (`context.stages.<name>`), as `bin/app.ts` does, for the facts the ops commands need.
 * Read as JSON, without the CDK: the CLI stays quick to start. The stage's full validation is the synth's.
 *
 * @throws UsageError when the file is missing or unreadable, or the stage is not in it (naming the stages there).
 */
export function readStage(name: string, cdkJsonPath = resolve('cdk.json')): StageFacts {
  let stages: Record<string, unknown>;
  try {
    const cdk = JSON.parse(readFileSync(cdkJsonPath, 'utf8')) as { context?: { stages?: unknown } };
    stages = (cdk.context?.stages ?? {}) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(
      `Cannot read the stages from ${cdkJsonPath}: ${(error as Error).message}. Run sqs-worker smoke in the folder of your cdk.json.`,
      { cause: error },
    );
  }
  const raw = stages[name];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new UsageError(
      `Stage "${name}" is not in ${cdkJsonPath} (context.stages has ${Object.keys(stages).join(', ') || 'none'}); pass --stage <one of them>`,
    );
  }
  const stage = raw as Record<string, unknown>;
  const text = (key: string) => (typeof stage[key] === 'string' ? (stage[key] as string) : undefined);
  return {
    name,
    stackName: `SqsInboxWorker-${name}`,
    store: text('store') === 'dynamodb' ? 'dynamodb' : 'postgres',
    runtime: text('runtime') === 'fargate' ? 'fargate' : 'lambda',
    consumer: text('consumer'),
    workerDbUser: text('workerDbUser') ?? 'sqs_worker',
    alarmsNone: text('alarms') === 'none',
    terminalPolicy: text('terminalPolicy') === 'dlq' ? 'dlq' : 'quarantine',
  };
}
