#!/usr/bin/env node
// npm start: the whole pipeline on a laptop (embedded PostgreSQL, fauxqs, local event source mapping, demo).
import { setTimeout as sleep } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { runDemoScenario } from '../tools/local/demo-scenario.ts';
import { LocalStackError } from '../tools/local/errors.ts';
import { startLocalStack } from '../tools/local/local-stack.ts';
import { renderDemoSummary } from '../tools/local/render-demo-summary.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true'; // EMF lines would drown the summary

const wholeNumber = (min: number, max: number) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new InvalidArgumentError(`must be a whole number from ${min} to ${max} (given "${value}")`);
  }
  return parsed;
};

const options = new Command('npm start')
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
  .option('-k, --keep', 'stay up after the summary and print the endpoints (Ctrl-C to stop)', false)
  .parse()
  .opts<{ messages: number; concurrency: number; keep: boolean }>();

const log = (line: string) => process.stderr.write(`${line}\n`);
log('Starting PostgreSQL, SQS and the queues…');
// A DATABASE_URL or SQS_ENDPOINT that cannot be used is a configuration error: one line naming it, exit 2.
const stack = await startLocalStack({
  databaseUrl: process.env.DATABASE_URL || undefined,
  sqsEndpoint: process.env.SQS_ENDPOINT || undefined,
  region: process.env.AWS_REGION || undefined,
  maxReceiveCount: 5,
  visibilityTimeoutSeconds: 3,
}).catch((error: unknown) => {
  if (!(error instanceof LocalStackError)) throw error;
  log(`npm start: ${error.message}`);
  process.exit(2);
});
let exitCode = 1;
try {
  log(
    `PostgreSQL ${stack.embedded.postgres ? '(embedded)' : '(DATABASE_URL)'} migrated (${stack.migrationsApplied} applied); SQS ${stack.embedded.sqs ? '(fauxqs)' : stack.sqsEndpoint}`,
  );
  const bar = new SingleBar({
    format: 'Processing |{bar}| {value}/{total} messages settled | {duration}s',
    stream: process.stderr,
    hideCursor: true,
  });
  let barStarted = false;
  const summary = await runDemoScenario({
    databaseUrl: stack.databaseUrl,
    sqs: stack.sqs,
    s3: stack.s3,
    queues: stack.queues,
    messages: options.messages,
    concurrency: options.concurrency,
    onProgress: (settled, total) => {
      if (!barStarted) {
        bar.start(total, 0);
        barStarted = true;
      }
      bar.update(settled);
    },
  });
  if (barStarted) bar.stop();
  process.stdout.write(renderDemoSummary(summary));
  exitCode = summary.checks.every((check) => check.ok) ? 0 : 1;

  if (options.keep) {
    process.stdout.write(
      [
        '',
        'Still running (Ctrl-C to stop):',
        `  DATABASE_URL=${stack.databaseUrl}`,
        `  SQS_ENDPOINT=${stack.sqsEndpoint}  (region ${stack.region})`,
        `  queue ${stack.queues.queueUrl}`,
        `  DLQ   ${stack.queues.dlqUrl}`,
        '',
      ].join('\n'),
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
  }
} finally {
  await Promise.race([stack.stop(), sleep(15_000)]);
}
process.exit(exitCode);
