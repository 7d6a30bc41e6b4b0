import { type EventSourceMapping, startEventSourceMapping } from './event-source-mapping.ts';
import type { FunctionHost } from './function-host.ts';
import type { LocalStack } from './local-stack.ts';

/**
 * The local event source mapping of the stack's queue in front of a function host, as `npm start -- --keep` and
 * `--handlers` run it: polling with the worker role's client (Lambda's mapping polls with the function's role),
 * batches of 10, up to `concurrency` invocations at once, each kill for memory or time reported to `onKill` as
 * Lambda reports it. The host is stopped when the mapping cannot start.
 *
 * @internal
 */
export async function startStackFunctionMapping(options: {
  readonly stack: Pick<LocalStack, 'clients' | 'queues' | 'region'>;
  readonly host: FunctionHost;
  readonly functionName: string;
  readonly concurrency: number;
  readonly onKill?: (line: string) => void;
}): Promise<EventSourceMapping> {
  const { stack, host } = options;
  return startEventSourceMapping({
    sqs: stack.clients('worker').sqs,
    queueUrl: stack.queues.queueUrl,
    invoker: host,
    functionName: options.functionName,
    batchSize: 10,
    maxConcurrency: options.concurrency,
    waitTimeSeconds: 1,
    region: stack.region,
    onInvocation: (report) => {
      if (report.reason === 'out-of-memory' || report.reason === 'timeout')
        options.onKill?.(`${report.detail} (${report.errorType}); ${report.function?.report ?? ''}`);
    },
  }).catch(async (error: unknown) => {
    await host.stop();
    throw error;
  });
}
