// Over 400 lines on purpose: every command's definition and help text in one file, the CLI's whole surface.
/**
 * `sqs-worker`: the operations CLI (the pattern document's runbooks as commands). Thin wiring only: each
 * action resolves its settings and calls one function of tools/ops: a command of the worker's store
 * (`session.store`, picked once from --store / WORKER_STORE in tools/ops/stores/open-ops-store.ts) or a
 * store-neutral command given that store. Exit codes: 0 ok, 1 operation failed, 2 usage or configuration error.
 */

import { userInfo } from 'node:os';
import { Command, CommanderError } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import type * as Ops from '../tools/ops/index.ts';
import { parseDuration } from '../tools/ops/parse-duration.ts';
import { parseCount, optionText as str } from '../tools/ops/parse-options.ts';
import type { OpsSession } from '../tools/ops/run-ops-command.ts';

// The commands' code (the AWS SDK, postgres.js, tables) loads when a command runs, not for --help or --version:
// in the bundle (dist/cli/) it is a chunk of its own.
let ops: typeof Ops;
const loadOps = async () => {
  ops ??= await import('../tools/ops/index.ts');
  return ops;
};

type Opts = Record<string, string | boolean | string[] | undefined>;

/** Wraps an action: settings from the command's global flags, exit code from {@link runOpsCommand}. */
const act =
  (name: string, run: (session: OpsSession, opts: Opts, args: string[]) => Promise<unknown>) =>
  async (...received: unknown[]) => {
    const command = received.at(-1) as Command;
    await loadOps();
    process.exitCode = await ops.runOpsCommand(name, command.optsWithGlobals(), (session) =>
      run(session, command.opts() as Opts, command.args),
    );
  };

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--store` of a command the DynamoDB store refuses, naming what to use instead (unsupported-command.ts). */
const POSTGRES_ONLY_STORE = [
  '--store <store>',
  'the store of the worker (env WORKER_STORE, default postgres); this command reads PostgreSQL: dynamodb is refused, naming what to use instead',
] as const;

/** `--store` of the DLQ commands: the store whose inbox they join and re-arm. */
const DLQ_STORE = [
  '--store <store>',
  'postgres or dynamodb: the store of the inbox the DLQ keys are joined with and re-armed in (env WORKER_STORE, default postgres)',
] as const;

const program = new Command('sqs-worker')
  .description(
    'Operations for the SQS → Lambda → PostgreSQL worker: inbox, queue, DLQ, quarantine, breaker, concurrency, capacity, smoke.',
  )
  .option('--database-url <url>', 'PostgreSQL connection URL (env DATABASE_URL)')
  .option('--queue-url <url>', 'source (worker) queue URL (env WORKER_QUEUE_URL)')
  .option('--dlq-url <url>', 'dead-letter queue URL (env WORKER_DLQ_URL)')
  .option(
    '--sqs-endpoint <url>',
    'SQS endpoint of a local emulator (env SQS_ENDPOINT, AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL); unset = AWS',
  )
  .option('--region <region>', 'AWS region (env AWS_REGION)')
  .option('--consumer <name>', 'inbox consumer name (env WORKER_CONSUMER, default case-worker)')
  .option('--mapping-uuid <uuid>', 'UUID of the worker event source mapping (env WORKER_MAPPING_UUID)')
  .option('--dynamodb-table <name>', "the DynamoDB store's table (env DYNAMODB_TABLE)")
  .option(
    '--dynamodb-endpoint <url>',
    'DynamoDB endpoint of DynamoDB Local (env DYNAMODB_ENDPOINT); unset = AWS',
  )
  .option('--json', 'print one JSON document on stdout, for scripts')
  .version(packageJson.version, '-V, --version', 'print the version of sqs-inbox-worker')
  // Every command's help lists these global flags too (commands created below inherit the setting).
  .configureHelp({ showGlobalOptions: true })
  .showHelpAfterError()
  .exitOverride()
  .addHelpText(
    'after',
    '\nCredentials: the AWS default chain (environment, profile, SSO, role) unless --sqs-endpoint is set.\n' +
      'Exit codes: 0 ok, 1 operation failed, 2 usage or configuration error (missing setting, bad flag, refused).\n' +
      'Tables never show message payloads; only "quarantine show" prints a body, on request.',
  );

program
  .command('health')
  .description(
    'what the health job publishes, read now: open quarantine, unfinished inbox rows, outbox backlog, lock waits, long transactions',
  )
  .option(
    '--long-transaction <duration>',
    'a transaction on the worker tables older than this is long-running',
    '30s',
  )
  .option(...POSTGRES_ONLY_STORE)
  .action(
    act('health', (s, opts) =>
      s.store.health(
        { out: s.out },
        {
          consumer: s.settings.consumer,
          longTransactionMs: parseDuration(str(opts.longTransaction) ?? '30s', '--long-transaction') * 1000,
        },
      ),
    ),
  );

const inbox = program.command('inbox').description('the idempotency inbox (worker_inbox)');
inbox
  .command('show')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the inbox (env WORKER_STORE, default postgres)',
  )
  .argument('<idempotencyKey>', 'the envelope idempotencyKey (not the SQS message id)')
  .description('one inbox row: status, attempts, failure, quarantine entries, operator actions')
  .action(
    act('inbox show', (s, _opts, [key]) =>
      s.store.inboxShow({ out: s.out }, { consumer: s.settings.consumer, idempotencyKey: key as string }),
    ),
  );
inbox
  .command('stats')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the inbox (env WORKER_STORE, default postgres)',
  )
  .description(
    'counts by status and failure code, oldest FAILED_RETRYABLE, completions in the last hour, duplicates, deliveries',
  )
  .action(
    act('inbox stats', (s) =>
      s.store.inboxStats({ out: s.out, clock: s.clock }, { consumer: s.settings.consumer }),
    ),
  );
inbox
  .command('cancel')
  .argument('<idempotencyKey>', 'the envelope idempotencyKey (not the SQS message id)')
  .description(
    'cancel a key that is not COMPLETED: any copy in flight or arriving later is quarantined (CANCELLED), never ' +
      'applied; an unknown key is cancelled ahead of its first copy; audited; a COMPLETED key is refused',
  )
  .option('--reason <text>', 'why, kept with the cancel and in the audit (no payload values)')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the inbox (env WORKER_STORE, default postgres)',
  )
  .action(
    act('inbox cancel', (s, opts, [key]) =>
      s.store.inboxCancel(
        { out: s.out, clock: s.clock },
        { consumer: s.settings.consumer, idempotencyKey: key as string, reason: str(opts.reason) },
      ),
    ),
  );
inbox
  .command('hot')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the inbox (env WORKER_STORE, default postgres)',
  )
  .option('--limit <n>', 'at most N aggregates and N keys', '10')
  .option('--since <duration>', 'keys last seen within this window', '1h')
  .option('--scan-limit <n>', 'DynamoDB: items the Scan reads at most (a partial answer past it)', '100000')
  .description('the aggregates and keys holding the most retries, claims in flight and lock waits')
  .action(
    act('inbox hot', (s, opts) =>
      s.store.inboxHot(
        { out: s.out, clock: s.clock },
        {
          consumer: s.settings.consumer,
          limit: parseCount(str(opts.limit) ?? '10', '--limit', 1, 1000),
          sinceSeconds: parseDuration(str(opts.since) ?? '1h', '--since'),
          scanLimit: parseCount(str(opts.scanLimit) ?? '100000', '--scan-limit', 1, 10_000_000),
        },
      ),
    ),
  );
inbox
  .command('purge')
  .description(
    'delete COMPLETED rows older than a window, in batches; refuses a window shorter than source + DLQ retention',
  )
  .requiredOption('--older-than <duration>', 'e.g. 30d, 36h, 2w')
  .option(
    '--source-retention <duration>',
    "source queue retention (default: the queue's MessageRetentionPeriod)",
  )
  .option('--dlq-retention <duration>', "DLQ retention (default: the DLQ's MessageRetentionPeriod)")
  .option('--batch-size <n>', 'rows per delete statement', '1000')
  .option('--dry-run', 'count, delete nothing')
  .option(...POSTGRES_ONLY_STORE)
  .action(
    act('inbox purge', (s, opts) => {
      const sourceRetention = str(opts.sourceRetention);
      const dlqRetention = str(opts.dlqRetention);
      const needsSqs = sourceRetention === undefined || dlqRetention === undefined;
      return s.store.inboxPurge(
        { out: s.out, clock: s.clock, sqs: needsSqs ? s.sqs() : undefined },
        {
          consumer: s.settings.consumer,
          olderThanSeconds: parseDuration(str(opts.olderThan) ?? '', '--older-than'),
          sourceRetentionSeconds: sourceRetention
            ? parseDuration(sourceRetention, '--source-retention')
            : undefined,
          dlqRetentionSeconds: dlqRetention ? parseDuration(dlqRetention, '--dlq-retention') : undefined,
          queueUrl: s.settings.queueUrl,
          dlqUrl: s.settings.dlqUrl,
          batchSize: parseCount(str(opts.batchSize) ?? '1000', '--batch-size', 1, 100_000),
          dryRun: opts.dryRun === true,
        },
      );
    }),
  );

const queue = program.command('queue').description('the source queue');
queue
  .command('status')
  .description(
    'depth, in flight, delayed, DLQ depth, retention, oldest unfinished message, deployed worker version (needs --queue-url)',
  )
  .option(
    '--store <store>',
    'the store of the worker (env WORKER_STORE, default postgres); the oldest unfinished message is read from PostgreSQL only',
  )
  .option(
    '--function-name <name>',
    'the worker function whose WORKER_VERSION is shown (env WORKER_FUNCTION_NAME, stack output WorkerFunctionName; default: the function of --mapping-uuid)',
  )
  .action(
    act('queue status', (s, opts) =>
      ops.queueStatus(
        {
          sqs: s.sqs(),
          out: s.out,
          clock: s.clock,
          store: s.store,
          cloudWatch: s.cloudWatch(),
          version: s.settings.sqsEndpoint
            ? { kind: 'local', version: process.env.SQS_WORKER_LOCAL_VERSION || undefined }
            : {
                kind: 'lambda',
                lambda: s.lambda(),
                functionName: str(opts.functionName) ?? (process.env.WORKER_FUNCTION_NAME || undefined),
                mappingUuid: s.settings.mappingUuid,
              },
        },
        { queueUrl: s.require('queueUrl'), dlqUrl: s.settings.dlqUrl, consumer: s.settings.consumer },
      ),
    ),
  );

queue
  .command('trend')
  .description(
    'runbook "the backlog grows": per period, sent/deleted/visible/age and EMF p99 from CloudWatch (AWS) beside the inbox\'s arrivals, completions, failures and p50/p99; a verdict: producer spike, consumer slowdown, draining or steady',
  )
  .option('--since <duration>', 'how far back to look (4 to 288 periods)', '1h')
  .option('--period <duration>', 'length of one period, whole minutes', '5m')
  .option('--by-type', 'also the arrivals, completion rate, p99 and failures per messageType')
  .option(
    '--metrics-namespace <name>',
    "the worker's POWERTOOLS_METRICS_NAMESPACE (EMF ProcessingMs, AWS only)",
    'SqsInboxWorker',
  )
  .option(
    '--service <name>',
    "the worker's POWERTOOLS_SERVICE_NAME, the metrics' service dimension (AWS only)",
    'sqs-inbox-worker',
  )
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the inbox (env WORKER_STORE, default postgres); dynamodb scans the table, bounded',
  )
  .action(
    act('queue trend', (s, opts) =>
      ops.queueTrend(
        { sqs: s.sqs(), out: s.out, clock: s.clock, store: s.store, cloudWatch: s.cloudWatch() },
        {
          queueUrl: s.require('queueUrl'),
          consumer: s.settings.consumer,
          sinceSeconds: parseDuration(str(opts.since) ?? '1h', '--since'),
          periodSeconds: parseDuration(str(opts.period) ?? '5m', '--period'),
          worker: {
            namespace: str(opts.metricsNamespace) ?? 'SqsInboxWorker',
            service: str(opts.service) ?? 'sqs-inbox-worker',
          },
          byType: opts.byType === true,
        },
      ),
    ),
  );

program
  .command('logs')
  .description(
    "one runbook question over the worker's logs (the Logs Insights queries the stack saves): in AWS with Logs Insights, locally on the local run's log file",
  )
  .option('--key <idempotencyKey>', 'every line of one idempotency key, oldest first')
  .option('--message-id <id>', 'every line of one SQS message id, oldest first')
  .option('--code <failureCode>', 'the records that failed with this code, newest first')
  .option('--slowest [n]', 'the N slowest records (processingMs), default 20')
  .option('--retries-by-aggregate', 'retryable failures counted by aggregateId')
  .option('--by-type', 'per messageType: records, rate per minute, failures, p99 and average processingMs')
  .option('--since <duration>', 'the time range: the last 15m, 1h, 2d, …', '1h')
  .option('--stage <stage>', 'AWS: read the log group from the outputs of stack SqsInboxWorker-<stage>')
  .option(
    '--log-group <name>',
    'AWS: the log group(s) to query (repeatable), instead of --stage',
    collect,
    [],
  )
  .option(
    '--log-file <file>',
    "a local run's log file (env SQS_WORKER_LOG_FILE, printed by npm start -- --keep)",
  )
  .option('--timeout <duration>', 'AWS: the longest wait for the query to complete', '60s')
  .action(
    act('logs', (s, opts) => {
      const picked = ops.pickLogQuery({
        key: str(opts.key),
        messageId: str(opts.messageId),
        code: str(opts.code),
        slowest: opts.slowest as string | boolean | undefined,
        retriesByAggregate: opts.retriesByAggregate === true,
        byType: opts.byType === true,
      });
      const source = ops.resolveLogsSource({
        logFile: str(opts.logFile),
        logGroups: opts.logGroup as string[] | undefined,
        stage: str(opts.stage),
        local: s.settings.sqsEndpoint !== undefined,
      });
      return ops.logsCommand(
        {
          out: s.out,
          clock: s.clock,
          logs: () => s.cloudWatchLogs(),
          cloudFormation: () => s.cloudFormation(),
        },
        {
          ...picked,
          source,
          sinceSeconds: parseDuration(str(opts.since) ?? '1h', '--since'),
          timeoutMs: parseDuration(str(opts.timeout) ?? '60s', '--timeout') * 1000,
        },
      );
    }),
  );

const dlq = program.command('dlq').description('the dead-letter queue (an incident queue, not a bin)');
dlq
  .command('peek')
  .description('read up to N DLQ messages without removing them, joined with the inbox, grouped by failure')
  .option('--max <n>', 'messages to read (1-1000)', '10')
  .option('--group', 'print only counts by failure code and the worker version that first saw each key')
  .option(...DLQ_STORE)
  .action(
    act('dlq peek', (s, opts) =>
      ops.dlqPeek(
        { store: s.store, sqs: s.sqs(), out: s.out },
        {
          dlqUrl: s.require('dlqUrl'),
          consumer: s.settings.consumer,
          max: parseCount(str(opts.max) ?? '10', '--max', 1, 1000),
          group: opts.group === true,
        },
      ),
    ),
  );
dlq
  .command('redrive')
  .description(
    'move at most N DLQ messages back to the source queue (send, then delete), audited; --canary N --watch: in rounds, following each key in the inbox, stopping on failures',
  )
  .option('--max <n>', 'never move more than N messages; start with a few (required without --canary)')
  .option('--rate <r/s>', 'messages per second', '5')
  .option('--filter <field=value>', 'messageType=<type> or code=<failure code> (repeatable)', collect, [])
  .option('--dry-run', 'show what would move; send and delete nothing')
  .option('--no-rearm', 'leave failed inbox rows as they are (the worker then repeats a terminal outcome)')
  .option('--canary <n>', "redrive N messages, then follow their keys' outcomes in the inbox and print each")
  .option('--watch', 'with --canary: go on in rounds while they succeed, until the DLQ is empty or --max')
  .option(
    '--growth <x>',
    'with --canary --watch: each round this many times the last (default 1: the same N)',
  )
  .option('--max-failures <k>', 'with --canary: stop once more than K keys did not succeed (default 0)')
  .option(
    '--round-timeout <duration>',
    "with --canary: how long a round waits for its keys' outcomes (default 60s)",
  )
  .option(...DLQ_STORE)
  .action(act('dlq redrive', (s, opts) => ops.dlqRedriveCommand(s, opts)));
const moveTask = dlq
  .command('move-task')
  .description("SQS's server-side DLQ redrive (StartMessageMoveTask), rate-limited");
moveTask
  .command('start')
  .description('move every DLQ message back to its source queue (or --destination-url)')
  .option('--rate <r/s>', 'MaxNumberOfMessagesPerSecond (1-500)', '10')
  .option('--destination-url <url>', 'move to this queue instead of the original source queues')
  .action(
    act('dlq move-task start', (s, opts) =>
      ops.dlqMoveTask(
        { sqs: s.sqs(), out: s.out, store: s.store },
        {
          action: 'start',
          dlqUrl: s.require('dlqUrl'),
          consumer: s.settings.consumer,
          ratePerSecond: parseCount(str(opts.rate)?.replace(/\/s$/, '') ?? '10', '--rate', 1, 500),
          destinationUrl: str(opts.destinationUrl),
        },
      ),
    ),
  );
moveTask
  .command('status')
  .description('the move tasks of the DLQ')
  .action(
    act('dlq move-task status', (s) =>
      ops.dlqMoveTask(
        { sqs: s.sqs(), out: s.out },
        { action: 'status', dlqUrl: s.require('dlqUrl'), consumer: s.settings.consumer },
      ),
    ),
  );
moveTask
  .command('cancel')
  .argument('[taskHandle]', 'task to cancel (default: the running one)')
  .description('cancel a running move task')
  .action(
    act('dlq move-task cancel', (s, _opts, [taskHandle]) =>
      ops.dlqMoveTask(
        { sqs: s.sqs(), out: s.out, store: s.store },
        { action: 'cancel', dlqUrl: s.require('dlqUrl'), consumer: s.settings.consumer, taskHandle },
      ),
    ),
  );

const quarantine = program
  .command('quarantine')
  .description("terminal messages kept in worker_quarantine (or the DynamoDB store's quarantine items)");
quarantine
  .command('list')
  .description('unreleased entries, newest first (no bodies)')
  .option('--all', 'include released entries')
  .option('--reason <code>', 'only this reason code')
  .option('--message-type <type>', 'only this messageType')
  .option(
    '--since <time>',
    'only entries last quarantined at or after this (ISO time, or a duration ago: 2h)',
  )
  .option('--before <time>', 'only entries last quarantined before this (ISO time, or a duration ago: 30m)')
  .option('--limit <n>', 'at most N entries', '50')
  .option(
    '--group',
    'also count every matching entry by reason code and the worker version that first saw its key',
  )
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the quarantine (env WORKER_STORE, default postgres); dynamodb scans the table',
  )
  .action(
    act('quarantine list', (s, opts) => {
      const options = {
        consumer: s.settings.consumer,
        includeReleased: opts.all === true,
        ...ops.parseQuarantineFilter(opts, s.clock.now()),
        limit: parseCount(str(opts.limit) ?? '50', '--limit', 1, 10_000),
        group: opts.group === true,
      };
      return s.store.quarantineList({ out: s.out }, options);
    }),
  );
quarantine
  .command('show')
  .argument('<id>', 'quarantine id (dynamodb: the body hash, or a unique prefix of 8+ characters)')
  .description('one entry WITH ITS BODY: prints payload values, on purpose; redact before sharing')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the quarantine (env WORKER_STORE, default postgres)',
  )
  .action(
    act('quarantine show', (s, _opts, [id]) =>
      s.store.quarantineShow({ out: s.out }, { consumer: s.settings.consumer, quarantineId: id as string }),
    ),
  );
/** The flags of `quarantine release --all`: the filters of `quarantine list`, a limit, a dry run, a confirmation. */
const withBulkRelease = (command: Command) =>
  command
    .option(
      '--all',
      'release every unreleased entry matching the filters below (oldest first), guards checked per entry',
    )
    .option('--reason <code>', 'with --all: only this reason code')
    .option('--message-type <type>', 'with --all: only this messageType')
    .option(
      '--since <time>',
      'with --all: only entries last quarantined at or after this (ISO time, or 2h ago)',
    )
    .option('--before <time>', 'with --all: only entries last quarantined before this (ISO time, or 30m ago)')
    .option('--limit <n>', 'with --all: release at most N entries (default 100)')
    .option('--dry-run', 'with --all: list what would be released and what each guard says; send nothing')
    .option('--yes', 'with --all: do not ask for confirmation (needed without a terminal)');
withBulkRelease(quarantine.command('release'))
  .argument('[id]', 'quarantine id (dynamodb: the body hash, or a unique prefix of 8+ characters); or --all')
  .description(
    'after a fix: re-send the stored message to the source queue and mark it released, audited; refuses when ' +
      'newer events of the same aggregate have completed since it was first seen',
  )
  .option(
    '--force',
    'release even though newer events of its aggregate completed: the older event is then applied after ' +
      'them and may roll state back unless its handler guards by version; check that first',
  )
  .option(
    '--edit <file.json>',
    'send the corrected envelope of this file instead, under a new version of the key (<key>:v2, then :v3, …); the ' +
      "original key's inbox entry is left as it is; the audit links both keys and keeps the bodies' sha256",
  )
  .option('--force-edit', 'accept an edited body whose messageType, aggregateType or aggregateId differs')
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the quarantine (env WORKER_STORE, default postgres)',
  )
  .action(
    act('quarantine release', async (s, opts, [id]) => {
      if (opts.all === true) return ops.quarantineReleaseAllCommand(s, opts, id);
      const refusal = ops.singleReleaseRefusal(opts, id);
      if (refusal) throw refusal;
      const edit = str(opts.edit);
      const options = {
        quarantineId: id as string,
        queueUrl: s.require('queueUrl'),
        consumer: s.settings.consumer,
        force: opts.force === true,
        edit: edit === undefined ? undefined : await ops.readEditedBody(edit),
        forceEdit: opts.forceEdit === true,
      };
      return s.store.quarantineRelease({ sqs: s.sqs(), out: s.out, clock: s.clock }, options);
    }),
  );

const breaker = program
  .command('breaker')
  .description("the event source mapping's circuit breaker (needs --mapping-uuid / WORKER_MAPPING_UUID)");
const breakerDeps = (s: OpsSession) => ({ lambda: s.lambda(), out: s.out, clock: s.clock });
breaker
  .command('status')
  .description('enabled or disabled, held by an operator or not, scaling, last change')
  .action(
    act('breaker status', (s) =>
      ops.breakerStatus(breakerDeps(s), { mappingUuid: s.require('mappingUuid') }),
    ),
  );
breaker
  .command('open')
  .description('hold the breaker open: disable the mapping; the breaker function will not enable it')
  .option('--reason <text>', 'why, kept on the hold tag with who and when')
  .action(
    act('breaker open', (s, opts) =>
      ops.breakerOpen(breakerDeps(s), {
        mappingUuid: s.require('mappingUuid'),
        operator: userInfo().username,
        reason: str(opts.reason),
      }),
    ),
  );
breaker
  .command('close')
  .description('release the hold and enable the mapping; the breaker function restores its scaling')
  .action(
    act('breaker close', (s) => ops.breakerClose(breakerDeps(s), { mappingUuid: s.require('mappingUuid') })),
  );

const concurrency = program
  .command('concurrency')
  .description(
    "the event source mapping's MaximumConcurrency, which the breaker moves from the worker's signals of load (needs --mapping-uuid / WORKER_MAPPING_UUID)",
  );
/** The floor and ceiling the breaker moves the mapping between, as given (shown by the commands). */
const concurrencyBounds = (opts: Opts) => {
  const floor = str(opts.floor) ?? process.env.WORKER_CONCURRENCY_FLOOR;
  const ceiling = str(opts.ceiling) ?? process.env.WORKER_MAX_CONCURRENCY;
  return {
    floor: parseCount(floor ?? '2', '--floor', 2, 1000),
    ...(ceiling ? { ceiling: parseCount(ceiling, '--ceiling', 2, 1000) } : {}),
  };
};
const withBounds = (command: Command) =>
  command
    .option('--floor <n>', "the breaker's CONCURRENCY_FLOOR (env WORKER_CONCURRENCY_FLOOR, default 2)")
    .option(
      '--ceiling <n>',
      "the configured MaximumConcurrency, the construct's maxConcurrency (env WORKER_MAX_CONCURRENCY)",
    );
const concurrencyDeps = (s: OpsSession) => ({ lambda: s.lambda(), out: s.out });
withBounds(
  concurrency
    .command('status')
    .description("the mapping's MaximumConcurrency, floor, ceiling, pinned or not"),
).action(
  act('concurrency status', (s, opts) =>
    ops.concurrencyStatus(concurrencyDeps(s), {
      mappingUuid: s.require('mappingUuid'),
      ...concurrencyBounds(opts),
    }),
  ),
);
withBounds(
  concurrency
    .command('pin')
    .argument('<n>', 'the MaximumConcurrency to hold, 2–1000')
    .description(
      'pin the MaximumConcurrency at <n>: tag the mapping and set it; the breaker will not move it',
    ),
).action(
  act('concurrency pin', (s, opts, [value]) =>
    ops.concurrencyPin(concurrencyDeps(s), {
      mappingUuid: s.require('mappingUuid'),
      value: value as string,
      ...concurrencyBounds(opts),
    }),
  ),
);
withBounds(
  concurrency.command('unpin').description('remove the pin: the breaker moves the MaximumConcurrency again'),
).action(
  act('concurrency unpin', (s, opts) =>
    ops.concurrencyUnpin(concurrencyDeps(s), {
      mappingUuid: s.require('mappingUuid'),
      ...concurrencyBounds(opts),
    }),
  ),
);

program
  .command('capacity')
  .description(
    "safe worker concurrency by the pattern document's formula, naming the binding constraint (connections for PostgreSQL, the write budget for DynamoDB)",
  )
  .option('--store <store>', 'postgres (connections) or dynamodb (write units)', 'postgres')
  .option('--db-max-connections <n>', 'max_connections of the database or proxy budget (postgres, required)')
  .option(
    '--db-reserved-connections <n>',
    'connections kept for admin, migrations and other clients (as the construct)',
    '10',
  )
  .option('--connections-per-worker <n>', 'connections one concurrent worker holds (its pool size)', '1')
  .option('--db-write-iops-budget <n>', 'write IOPS the worker may spend')
  .option('--write-iops-per-message <n>', 'write IOPS one message costs')
  .option(
    '--max-write-units-per-second <n>',
    'dynamodb: write units per second the worker may spend (default 4000, a new on-demand table)',
  )
  .option(
    '--transact-items-per-message <n>',
    'dynamodb: items of the TransactWriteItems, domain items + the inbox completion (default 2)',
  )
  .option('--item-size-kb <n>', 'dynamodb: size of the largest item written, KB (default 1)')
  .option('--record-latency-ms <n>', 'dynamodb: expected time of one record, gate to commit (default 15)')
  .option('--record-concurrency <n>', 'dynamodb: records one invocation processes at once (default 1)')
  .option('--downstream-rate-limit <n>', 'calls per second a downstream provider allows')
  .option('--calls-per-message <n>', 'downstream calls per message')
  .option('--lock-contention-safe-parallelism <n>', 'parallelism above which lock contention hurts')
  .action(act('capacity', async (s, opts) => ops.capacityCommand({ store: s.store, out: s.out }, opts)));

program
  .command('smoke')
  .description(
    'after every cdk deploy: canary envelopes through the real stack, checked in a PASS/FAIL/SKIP table (exit 1 on a FAIL)',
  )
  .requiredOption(
    '--stage <stage>',
    'the stage of cdk.json that was deployed: its store and settings, and (in AWS) the outputs of stack SqsInboxWorker-<stage>',
  )
  .option('--timeout <duration>', 'how long the run waits for its canaries, at most', '120s')
  .option(
    '--skip-dlq',
    'do not send the never-recovering canary (it takes maxReceiveCount receives and their backoff, and fires DlqNotEmpty)',
  )
  .option('--alarm-topic-arn <arn>', 'the alarm topic (default: the stack output AlarmTopicArn)')
  .option('--proxy-name <name>', 'the RDS Proxy of the worker (default: the stack output ProxyName)')
  .option(
    '--worker-db-user <name>',
    "the worker's database user to check (default: the stage's workerDbUser, sqs_worker)",
  )
  .action(
    act('smoke', (s, opts) =>
      ops.smokeCommand(s, {
        stage: str(opts.stage) ?? '',
        timeoutSeconds: parseDuration(str(opts.timeout) ?? '120s', '--timeout'),
        skipDlq: opts.skipDlq === true,
        alarmTopicArn: str(opts.alarmTopicArn),
        proxyName: str(opts.proxyName),
        workerDbUser: str(opts.workerDbUser),
        flags: program.opts(),
      }),
    ),
  );

program
  .command('console')
  .description(
    'the operator console in a browser: overview, failure groups, one message, quarantine and DLQ lists, and (with --allow-actions) release, canary redrive and cancel with their dry runs; on 127.0.0.1 with a per-run token',
  )
  .option(
    '--allow-actions',
    'offer and accept the actions (release, canary redrive, cancel); without it the console only reads',
  )
  .option('--port <port>', 'the port to listen on (default: any free port)')
  .option(
    '--host <address>',
    'the address to bind; anything but loopback is reachable from other machines',
    '127.0.0.1',
  )
  .option(
    '--store <store>',
    'postgres or dynamodb: the store of the worker (env WORKER_STORE, default postgres)',
  )
  .option('--stage <stage>', 'AWS: the log page reads the log groups of stack SqsInboxWorker-<stage>')
  .option(
    '--log-group <name>',
    'AWS: the log group(s) of the log page (repeatable), instead of --stage',
    collect,
    [],
  )
  .option('--log-file <file>', "a local run's log file (env SQS_WORKER_LOG_FILE)")
  .option(
    '--alarm-prefix <prefix>',
    "AWS: the prefix of the stack's alarm names on the overview",
    'SqsInboxWorker',
  )
  .action(
    act('console', async (s, opts) => {
      const { consoleCommand } = await import('../tools/console/console-command.ts');
      return consoleCommand(s, opts);
    }),
  );

program
  .command('start')
  .description(
    'runs the worker locally (npm start of the repository, from an installed package too): your --handlers on embedded PostgreSQL or DynamoDB Local, the SQS emulator and the Lambda or Fargate runtime; its own options: sqs-worker start --help',
  )
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[options...]', "bin/local.ts's options (--handlers, --store, --runtime, --migrations, …)")
  .action(async () => {
    const { startLocal } = await import('../tools/local/start-command.ts');
    // Everything after `start`, as typed: the local runtime parses its own options.
    process.exitCode = await startLocal(process.argv.slice(process.argv.indexOf('start') + 1));
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // commander's own exit code tells an explicit --help / help / --version (0) from help shown because the
  // command is incomplete, e.g. "sqs-worker dlq" without a subcommand (1); every non-zero is a usage error.
  process.exitCode = error.exitCode === 0 ? 0 : 2;
}
