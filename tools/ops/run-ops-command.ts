import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describeMissingAwsSetup } from '../../lambda/aws/describe-missing-aws-setup.ts';
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import { createOpsSqs } from './collaborators.ts';
import { FailedChecksError, OpsError } from './errors.ts';
import type { OpsFlags, OpsSettings, RequiredSetting } from './ops-settings.ts';
import { requireSetting, resolveOpsSettings } from './ops-settings.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { createProcessOutput } from './process-output.ts';
import { openOpsStore } from './stores/open-ops-store.ts';

/** What a command's action gets: settings, output, clock, the worker's store and lazily opened clients. */
export interface OpsSession {
  readonly settings: OpsSettings;
  readonly out: OpsOutput;
  readonly clock: Clock;
  /** A required setting, or a UsageError naming its flag and environment variable. */
  require(name: RequiredSetting): string;
  /**
   * The worker's store, chosen once from `--store` / `WORKER_STORE` ({@link openOpsStore}); its client opens on the
   * first command that reads it, and closes with the session.
   */
  readonly store: OpsStore;
  /**
   * Another store than the settings' (`smoke`: the stage's store and its table, from cdk.json and the stack's
   * outputs), with the session's other settings; it closes with the session.
   */
  openStore(choice: Pick<OpsSettings, 'store' | 'dynamodbTable'>): OpsStore;
  /** The SQS client (opened on first use). */
  sqs(): SQSClient;
  /** A CloudWatch client against AWS; undefined with a local SQS endpoint (emulators have no CloudWatch). */
  cloudWatch(): CloudWatchClient | undefined;
  /** A Lambda client against AWS (the event source mapping's control plane), opened on first use. */
  lambda(): LambdaClient;
  /** A CloudWatch Logs client against AWS (Logs Insights queries), its SDK loaded and opened on first use. */
  cloudWatchLogs(): Promise<CloudWatchLogsClient>;
  /** A CloudFormation client against AWS (stack outputs), its SDK loaded and opened on first use. */
  cloudFormation(): Promise<CloudFormationClient>;
}

/** Where {@link runOpsCommand} reports (the real process by default). */
export interface OpsRuntime {
  readonly env?: Record<string, string | undefined>;
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WriteStream | NodeJS.WritableStream;
}

/**
 * Runs one CLI command: resolves settings (flags over environment), picks the store, opens clients lazily, closes
 * them, and turns the outcome into the exit code. A failure is one line on stderr (`sqs-worker <name>: <message>`)
 * and, with `--json`, one document `{ error: { type, message, exitCode, data? } }` on stdout; an error of the store's
 * client is told as the store describes it (the setting and host to check, never a password).
 *
 * @returns the exit code (the caller sets `process.exitCode`): 0 ok, 1 the operation failed, 2 usage or configuration.
 */
export async function runOpsCommand(
  name: string,
  flags: OpsFlags,
  action: (session: OpsSession) => Promise<unknown>,
  runtime: OpsRuntime = {},
): Promise<number> {
  let settings: OpsSettings;
  try {
    settings = resolveOpsSettings(flags, runtime.env ?? process.env);
  } catch (error) {
    const out = createProcessOutput({
      json: flags.json === true,
      stdout: runtime.stdout,
      stderr: runtime.stderr,
    });
    const message = error instanceof Error ? error.message : String(error);
    if (flags.json)
      out.print(JSON.stringify({ error: { type: 'UsageError', message, exitCode: 2 } }, null, 2));
    out.note(`sqs-worker ${name}: ${message}`);
    return 2;
  }
  const out = createProcessOutput({ json: settings.json, stdout: runtime.stdout, stderr: runtime.stderr });
  const { session, stores, close } = openSession(name, settings, out);
  try {
    // A command the store cannot do is refused before it opens, reads or sends anything.
    const refused = session.store.refusal(name);
    if (refused) throw refused;
    await action(session);
    return 0;
  } catch (error) {
    return report(name, settings, out, stores, error);
  } finally {
    await close();
  }
}

/** The session of one command, the stores it opened (to describe their errors) and what closes it all. */
function openSession(
  name: string,
  settings: OpsSettings,
  out: OpsOutput,
): { session: OpsSession; stores: readonly OpsStore[]; close: () => Promise<void> } {
  const stores: OpsStore[] = [];
  let sqs: SQSClient | undefined;
  let cloudWatch: CloudWatchClient | undefined;
  let lambda: LambdaClient | undefined;
  let cloudWatchLogs: CloudWatchLogsClient | undefined;
  let cloudFormation: CloudFormationClient | undefined;
  const region = settings.region ? { region: settings.region } : {};
  const openStore = (choice: Pick<OpsSettings, 'store' | 'dynamodbTable'>) => {
    const store = openOpsStore({ ...settings, ...choice }, name);
    stores.push(store);
    return store;
  };
  const session: OpsSession = {
    settings,
    out,
    clock: systemClock,
    require: (setting) => requireSetting(settings, setting, name),
    store: openStore(settings),
    openStore,
    sqs() {
      sqs ??= createOpsSqs(settings);
      return sqs;
    },
    cloudWatch() {
      if (settings.sqsEndpoint) return undefined;
      cloudWatch ??= new CloudWatchClient(settings.region ? { region: settings.region } : {});
      return cloudWatch;
    },
    lambda() {
      lambda ??= new LambdaClient(region);
      return lambda;
    },
    async cloudWatchLogs() {
      const { CloudWatchLogsClient } = await import('@aws-sdk/client-cloudwatch-logs');
      cloudWatchLogs ??= new CloudWatchLogsClient(region);
      return cloudWatchLogs;
    },
    async cloudFormation() {
      const { CloudFormationClient } = await import('@aws-sdk/client-cloudformation');
      cloudFormation ??= new CloudFormationClient(region);
      return cloudFormation;
    },
  };
  const close = async () => {
    sqs?.destroy();
    cloudWatch?.destroy();
    lambda?.destroy();
    cloudWatchLogs?.destroy();
    cloudFormation?.destroy();
    await Promise.all(stores.map((store) => store.close()));
  };
  return { session, stores, close };
}

/** Prints a failed command's error (a line on stderr, with `--json` a document on stdout) and returns its exit code. */
function report(
  name: string,
  settings: OpsSettings,
  out: OpsOutput,
  stores: readonly OpsStore[],
  error: unknown,
): number {
  const described = stores.map((store) => store.describeError(error)).find((d) => d !== undefined);
  const exitCode = described?.exitCode ?? (error instanceof OpsError ? error.exitCode : 1);
  const type = described?.type ?? (error instanceof Error ? error.name : 'Error');
  const message =
    described?.message ??
    describeMissingAwsSetup(error, 'The AWS SDK') ??
    (error instanceof Error ? error.message : String(error));
  const data = error instanceof OpsError ? error.data : undefined;
  // A result that was printed with its failures in it (FailedChecksError) is the one JSON document on stdout.
  if (settings.json && !(error instanceof FailedChecksError)) {
    out.print(JSON.stringify({ error: { type, message, exitCode, ...(data ? { data } : {}) } }, null, 2));
  }
  out.note(`sqs-worker ${name}: ${message}`);
  return exitCode;
}
