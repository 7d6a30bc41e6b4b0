#!/usr/bin/env node
// npm start: the whole pipeline on a laptop (embedded PostgreSQL, fauxqs, local event source mapping, demo).
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, MigrationError } from '../lambda/errors.ts';
import { runDemoScenario } from '../tools/local/demo-scenario.ts';
import { runDynamoDbDemoScenario } from '../tools/local/demo-scenario-dynamodb.ts';
import { describeLimits } from '../tools/local/describe-limits.ts';
import { HandlersModuleError, LocalStackError } from '../tools/local/errors.ts';
import { describeRefusal, describeRefusals } from '../tools/local/iam/local-iam.ts';
import { LOCAL_ACCESS_KEY_IDS } from '../tools/local/iam/local-identities.ts';
import { keepConsuming } from '../tools/local/keep-consuming.ts';
import { resolveHandlersPath } from '../tools/local/load-handlers.ts';
import { startLocalConsole } from '../tools/local/local-console.ts';
import { LocalDynamoDbError } from '../tools/local/local-dynamodb.ts';
import { LOG_FILE_VARIABLE, openLocalLogFile } from '../tools/local/local-log-file.ts';
import { startLocalStack } from '../tools/local/local-stack.ts';
import { localWorkerVersion } from '../tools/local/local-worker-version.ts';
import { renderDemoSummary } from '../tools/local/render-demo-summary.ts';
import { serveHandlers } from '../tools/local/serve-handlers.ts';
import { localPollerTask, localWorkerFunction } from '../tools/local/stack-compute.ts';
import { LOCAL_COMMAND_VARIABLE } from '../tools/local/start-command.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true'; // EMF lines would drown the summary

const wholeNumber = (min: number, max: number) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new InvalidArgumentError(`must be a whole number from ${min} to ${max} (given "${value}")`);
  }
  return parsed;
};

/** `npm start`, or the ops CLI's `sqs-worker start` that runs this file from an installed package. */
const COMMAND = process.env[LOCAL_COMMAND_VARIABLE] || 'npm start';

const options = new Command(COMMAND)
  .description(
    'Runs the worker locally: embedded PostgreSQL (or DATABASE_URL), the fauxqs SQS emulator (or SQS_ENDPOINT), ' +
      'migrations, a queue with a DLQ, the local event source mapping and a scenario covering every failure case.',
  )
  .option(
    '-m, --messages <n>',
    'regular messages to send (duplicates and failure cases come on top)',
    wholeNumber(20, 100_000),
    200,
  )
  .option(
    '-c, --concurrency <n>',
    'maximum concurrent invocations (= database connections)',
    wholeNumber(1, 50),
    4,
  )
  .addOption(
    new Option(
      '--runtime <runtime>',
      'what consumes the queue in the scenario: the local event source mapping (Lambda) or the long-running poller (ECS/Fargate)',
    )
      .choices(['event-source-mapping', 'poller'])
      .default('event-source-mapping'),
  )
  .option(
    '-k, --keep',
    'stay up after the summary and print the endpoints and the operator console (Ctrl-C to stop)',
    false,
  )
  .option(
    '--console-actions',
    "let the kept run's operator console act (release, canary redrive, cancel), as sqs-worker console --allow-actions",
    false,
  )
  .option(
    '--store <store>',
    'postgres, or dynamodb: the same scenario on DynamoDB Local (needs java) with the DynamoDB example handlers',
    'postgres',
  )
  .option(
    '--no-iam',
    "don't enforce the synthesized stack's IAM policies on the local SQS, S3 and DynamoDB calls (debugging; also LOCAL_IAM=off)",
  )
  .option(
    '--payload-mib <n>',
    "the payload-memory case: one payloadRef of N MiB of JSON, sent after the scenario; above the stack's PAYLOAD_MAX_BYTES the limit is forced up to it, and the worker runs out of memory",
    wholeNumber(1, 1024),
  )
  .option(
    '--memory-mb <n>',
    "run the worker function (with --runtime poller, the poller's task) with this memory instead of the stage's",
    wholeNumber(128, 10_240),
  )
  .option(
    '--handlers <file>',
    'run your own handlers instead of the scenario: a module that exports `handlers` (defineHandler, or defineDynamoHandler with --store dynamodb), through the runtime of --runtime; stays up, consuming what you send to the queue (Ctrl-C to stop)',
  )
  .option(
    '--migrations <dir>',
    "the migrations to apply (the package's and yours after them, docs/installed-package.md); default: migrations/ of the current folder if it has one, else the package's",
  )
  .parse()
  .opts<{
    migrations?: string;
    messages: number;
    concurrency: number;
    runtime: 'event-source-mapping' | 'poller';
    keep: boolean;
    consoleActions: boolean;
    handlers?: string;
    store: string;
    iam: boolean;
    payloadMib?: number;
    memoryMb?: number;
  }>();

const log = (line: string) => process.stderr.write(`${line}\n`);
const untilStopped = () =>
  new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
if (options.store !== 'postgres' && options.store !== 'dynamodb') {
  log(`${COMMAND}: --store must be postgres or dynamodb (given "${options.store}")`);
  process.exit(2);
}
const dynamo = options.store === 'dynamodb';
// The DynamoDB store runs at most 10 records at once (WORKER_RECORD_CONCURRENCY, POLLER_CONCURRENCY): the poller's
// records in flight are --concurrency.
if (dynamo && options.runtime === 'poller' && options.concurrency > 10) {
  log(
    `${COMMAND}: --concurrency (${options.concurrency}) is the poller's records in flight, and the DynamoDB store runs at most 10 at once; give --concurrency 10 or less`,
  );
  process.exit(2);
}
// A --handlers path that does not exist fails before anything starts.
if (options.handlers) {
  try {
    resolveHandlersPath(options.handlers);
  } catch (error) {
    if (!(error instanceof HandlersModuleError)) throw error;
    log(`${COMMAND}: ${error.message}`);
    process.exit(2);
  }
}
const migrationsDirectory = migrationsFolder(options.migrations);
log(dynamo ? 'Starting DynamoDB Local, SQS and the queues…' : 'Starting PostgreSQL, SQS and the queues…');
// A DATABASE_URL or SQS_ENDPOINT that cannot be used is a configuration error: one line naming it, exit 2.
// The project's SQS_ENDPOINT first, then the AWS SDK's own endpoint variables (LocalStack, the AWS CLI).
const sqsEndpointSetting = (['SQS_ENDPOINT', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'] as const).find(
  (name) => process.env[name],
);
// The local IAM layer: on unless --no-iam or LOCAL_IAM=off. Each refusal is printed when it happens.
const iam = options.iam && !/^(off|false|0|no)$/i.test(process.env.LOCAL_IAM ?? '');
if (iam) log('Local IAM: enforcing the synthesized roles (--no-iam or LOCAL_IAM=off to turn off)…');
const stack = await startLocalStack({
  iam: iam
    ? {
        onRefusal: (refusal) =>
          log(
            `${describeRefusal(refusal)}: ${refusal.message}. Grant it in lib/ (${refusal.rolePath}), or run with --no-iam to debug.`,
          ),
      }
    : false,
  databaseUrl: process.env.DATABASE_URL || undefined,
  sqsEndpoint: sqsEndpointSetting && process.env[sqsEndpointSetting],
  sqsEndpointSetting,
  region: process.env.AWS_REGION || undefined,
  maxReceiveCount: 5,
  // Your handlers get the construct's default (6 × the 30 s timeout); the scenario a short one, to run quickly.
  visibilityTimeoutSeconds: options.handlers ? 180 : 3,
  store: dynamo ? 'dynamodb' : 'postgres',
  migrationsDirectory,
}).catch((error: unknown) => {
  // A migration file that breaks the naming rule, a gap in the numbering: one line naming the file and the fix.
  if (error instanceof LocalDynamoDbError || error instanceof MigrationError) {
    log(`${COMMAND}: ${error.message}`);
    process.exit(2);
  }
  if (!(error instanceof LocalStackError)) throw error;
  log(`${COMMAND}: ${error.message}`);
  process.exit(2);
});
// The worker's JSON log lines, as its log group would hold them: `sqs-worker logs` reads them from here.
const logFile = await openLocalLogFile(process.env[LOG_FILE_VARIABLE] || undefined);
log(`Worker log lines: ${logFile.path} (sqs-worker logs reads them: export ${LOG_FILE_VARIABLE})`);
let exitCode = 1;
try {
  log(
    stack.dynamodb
      ? `DynamoDB Local at ${stack.dynamodb.endpoint}, table ${stack.dynamodb.tableName}; SQS ${stack.embedded.sqs ? '(fauxqs)' : stack.sqsEndpoint}`
      : `PostgreSQL ${stack.embedded.postgres ? '(embedded)' : '(DATABASE_URL)'} migrated (${stack.migrationsApplied} applied), each component connects as its database role (${Object.values(stack.databaseRoles?.names ?? {}).join(', ')}); SQS ${stack.embedded.sqs ? '(fauxqs)' : stack.sqsEndpoint}`,
  );
  try {
    if (options.handlers) exitCode = await runOwnHandlers(options.handlers);
    else exitCode = await runScenario();
  } catch (error) {
    // A component that cannot start (the poller refused its queue's attributes, …): its one line, exit 2.
    if (!(error instanceof ConfigError)) throw error;
    log(`${COMMAND}: ${error.message}`);
    exitCode = 2;
  }
  exitCode = iamSummary(exitCode);
} finally {
  await Promise.race([stack.stop(), sleep(15_000)]);
  await logFile.close();
}
process.exit(exitCode);

/**
 * The migrations a run applies: `--migrations` (relative to the current folder), else `migrations/` of the current
 * folder when there is one (this repository's, or your project's), else the package's own (undefined).
 */
function migrationsFolder(given: string | undefined): string | undefined {
  if (given === undefined) return existsSync('migrations') ? resolve('migrations') : undefined;
  const folder = resolve(given);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    log(
      `${COMMAND}: --migrations ${given}: no such folder (looked for ${folder}). Give the folder holding the package's migrations and yours (docs/installed-package.md).`,
    );
    process.exit(2);
  }
  return folder;
}

/**
 * The cdk.json stage whose component a run starts (its memory, timeout, variables and role): `dev` (the Lambda worker),
 * `fargate` (the poller), `dev-dynamodb` and `fargate-dynamodb` on the DynamoDB store.
 */
function localStage(poller: boolean, dynamodb: boolean): string {
  if (dynamodb) return poller ? 'fargate-dynamodb' : 'dev-dynamodb';
  return poller ? 'fargate' : 'dev';
}

/**
 * The run's last line about IAM: how many calls the synthesized roles refused (each named), or that none was;
 * a refusal fails the run (exit 1): the same call would be refused in AWS.
 */
function iamSummary(exitCode: number): number {
  if (!stack.iam) {
    log('IAM: not enforced (--no-iam / LOCAL_IAM=off): calls the roles do not allow went through');
    return exitCode;
  }
  const refusals = stack.iam.refusals();
  if (refusals.length === 0) {
    log("IAM: every call was allowed by the synthesized stack's roles (0 refused)");
    return exitCode;
  }
  const lines = describeRefusals(refusals);
  log(`IAM: ${refusals.length} call(s) refused, as AWS would refuse them:`);
  for (const line of lines) log(`  ${line}`);
  return exitCode === 0 ? 1 : exitCode;
}

/**
 * `--handlers <file>`: the user's handlers on the stack's store (PostgreSQL or DynamoDB handlers, checked against
 * `--store`) behind the local event source mapping, or run by the poller with `--runtime poller`, until Ctrl-C.
 */
async function runOwnHandlers(handlersPath: string): Promise<number> {
  let served: Awaited<ReturnType<typeof serveHandlers>>;
  try {
    served = await serveHandlers({
      stack,
      runtime: options.runtime,
      handlersPath,
      concurrency: options.concurrency,
      memorySizeMb: options.memoryMb,
      onKill: log,
      // Your worker's lines on the terminal, as before, and in the run's log file.
      onOutput: (line, source) => {
        (source.stream === 'stdout' ? process.stdout : process.stderr).write(`${line}\n`);
        logFile.write(line);
      },
    });
  } catch (error) {
    if (!(error instanceof HandlersModuleError)) throw error;
    log(`${COMMAND}: ${error.message}`);
    return 2;
  }
  const types = served.handlers.map((h) => `${h.messageType} v${h.schemaVersion}`).join(', ');
  const opsConsole = await openConsole();
  process.stdout.write(
    [
      `Worker "${served.consumer}" running ${types} from ${served.file} (Ctrl-C to stop)`,
      served.limits,
      'The ops CLI (npx sqs-worker …) reads these settings:',
      ...settingsLines(),
      '',
      opsConsole.line,
      '',
      'Send a message (put your payload in "payload"):',
      `  ${served.exampleCommand}`,
      '',
    ].join('\n'),
  );
  await untilStopped();
  await opsConsole.stop();
  await served.stop();
  return 0;
}

/**
 * The settings of the local stack as the ops CLI reads them (`export NAME='value'` lines to paste into a shell): the
 * operator's local key when the IAM layer is on (allowed everything, for the ops CLI and the AWS CLI), and the ops
 * commands' database role when the components run as their roles.
 */
function settingsLines(): string[] {
  return settingsPairs().map(([name, value]) => `  export ${name}='${value.replaceAll("'", `'\\''`)}'`);
}

/** The settings of {@link settingsLines} as name and value. */
function settingsPairs(): [string, string][] {
  const settings: [string, string][] = [
    ...(stack.dynamodb
      ? ([
          ['WORKER_STORE', 'dynamodb'],
          ['DYNAMODB_ENDPOINT', stack.dynamodb.endpoint],
          ['DYNAMODB_TABLE', stack.dynamodb.tableName],
        ] as [string, string][])
      : ([['DATABASE_URL', stack.databaseRoles?.url('ops') ?? stack.databaseUrl]] as [string, string][])),
    ['SQS_ENDPOINT', stack.sqsEndpoint],
    ['AWS_REGION', stack.region],
    ['WORKER_QUEUE_URL', stack.queues.queueUrl],
    ['WORKER_DLQ_URL', stack.queues.dlqUrl],
    [LOG_FILE_VARIABLE, logFile.path],
    ['SQS_WORKER_LOCAL_VERSION', localWorkerVersion()],
    ...(stack.iam
      ? ([
          ['AWS_ACCESS_KEY_ID', LOCAL_ACCESS_KEY_IDS.admin],
          ['AWS_SECRET_ACCESS_KEY', 'local'],
        ] as [string, string][])
      : []),
  ];
  return settings;
}

/**
 * The operator console on the printed settings (tools/local/local-console.ts), and the line that names its URL; a
 * console that cannot start is told and the run goes on without it.
 */
async function openConsole(): Promise<{ line: string; stop: () => Promise<void> }> {
  try {
    const started = await startLocalConsole(Object.fromEntries(settingsPairs()), options.consoleActions);
    const mode = options.consoleActions ? 'actions allowed' : 'read-only; --console-actions to act from it';
    return { line: `Operator console (${mode}): ${started.url}`, stop: started.stop };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { line: `The operator console did not start: ${message}`, stop: async () => {} };
  }
}

/** The scenario covering every failure case, its summary and checks; with `--keep`, stays up after them. */
async function runScenario(): Promise<number> {
  // The component as the stage synthesizes it: its memory, timeout and variables (docs/local.md, "Memory and time").
  const poller = options.runtime === 'poller';
  const stage = localStage(poller, Boolean(stack.dynamodb));
  const worker = poller
    ? undefined
    : await localWorkerFunction(stack, { stage, memorySizeMb: options.memoryMb });
  const pollerTask = poller
    ? await localPollerTask(stack, { stage, memoryMiB: options.memoryMb })
    : undefined;
  log(describeLimits(stage, worker ? { worker } : { poller: pollerTask as NonNullable<typeof pollerTask> }));
  const bar = new SingleBar({
    format: 'Processing |{bar}| {value}/{total} messages settled | {duration}s',
    stream: process.stderr,
    hideCursor: true,
  });
  let barStarted = false;
  const onProgress = (settled: number, total: number) => {
    if (!barStarted) {
      bar.start(total, 0);
      barStarted = true;
    }
    bar.update(settled);
  };
  // The payload-memory case (--payload-mib), the same on either store.
  const payloadMemory = {
    ...(options.payloadMib ? { payloadBytes: options.payloadMib * 1024 * 1024 } : {}),
    memoryOverridden: options.memoryMb !== undefined,
  };
  const summary = stack.dynamodb
    ? await runDynamoDbDemoScenario({
        dynamodb: stack.dynamodb,
        sqs: stack.sqs,
        s3: stack.s3,
        bucket: stack.payloadBucket,
        worker: stack.clients('worker'),
        relay: stack.clients('relay'),
        region: stack.region,
        runtime: options.runtime,
        ...(worker ? { workerFunction: worker } : {}),
        ...(pollerTask ? { poller: pollerTask } : {}),
        queues: stack.queues,
        messages: options.messages,
        concurrency: options.concurrency,
        ...payloadMemory,
        onProgress,
        onLogLine: logFile.write,
      })
    : await runDemoScenario({
        databaseUrl: stack.databaseUrl,
        databaseUrlOf: stack.databaseRoles?.url,
        sqs: stack.sqs,
        s3: stack.s3,
        bucket: stack.payloadBucket,
        clients: stack.clients,
        queues: stack.queues,
        messages: options.messages,
        concurrency: options.concurrency,
        runtime: options.runtime,
        worker,
        poller: pollerTask,
        ...payloadMemory,
        onProgress,
        onLogLine: logFile.write,
      });
  if (barStarted) bar.stop();
  process.stdout.write(renderDemoSummary(summary));
  if (options.keep) {
    // The scenario's worker stopped with it: a worker of its own consumes what is sent while the stack stays up.
    const kept = await keepConsuming({
      stack,
      concurrency: options.concurrency,
      runtime: options.runtime,
      memoryMb: options.memoryMb,
      onKill: log,
      onLogLine: logFile.write,
    });
    const opsConsole = await openConsole();
    process.stdout.write(
      [
        '',
        'Still running, the worker consuming the queue (Ctrl-C to stop). The ops CLI (npx sqs-worker …) reads these settings:',
        ...settingsLines(),
        '',
        opsConsole.line,
        '',
        // The stage whose roles the local IAM layer enforces for this run (docs/local.md, "IAM, locally").
        `Check it with the canaries, as after every deploy: npx sqs-worker smoke --stage ${stage}`,
        '',
      ].join('\n'),
    );
    await untilStopped();
    await opsConsole.stop();
    await kept.stop();
  }
  return summary.checks.every((check) => check.ok) ? 0 : 1;
}
