import type { OpsSession } from '../ops/run-ops-command.ts';

/** How the console was started (`sqs-worker console`'s flags). */
export interface ConsoleOptions {
  /** Actions (release, canary redrive, cancel) are offered and accepted; without it the console only reads. */
  readonly allowActions: boolean;
  /** Who acts, in every audit entry the console's actions write. */
  readonly actor: string;
  /** The local run's log file (`SQS_WORKER_LOG_FILE`): the message page's log query reads it. */
  readonly logFile?: string | undefined;
  /** AWS: the stage whose stack outputs name the log groups of the log page (`logs --stage`). */
  readonly stage?: string | undefined;
  /** AWS: the log groups of the log page (`logs --log-group`), instead of a stage. */
  readonly logGroups?: readonly string[] | undefined;
  /** The prefix of the stack's alarm names (DescribeAlarms, AWS only). @default 'SqsInboxWorker' */
  readonly alarmPrefix: string;
  /** The worker's version against a local endpoint (`SQS_WORKER_LOCAL_VERSION`), shown on the overview. */
  readonly localVersion?: string | undefined;
}

/**
 * What every page and action gets: the CLI's session (its store, clients, settings and clock: the same collaborators
 * the commands use), how the console was started, and the run's CSRF token for the forms it renders.
 */
export interface ConsoleContext {
  readonly session: OpsSession;
  readonly options: ConsoleOptions;
  readonly csrf: string;
}
