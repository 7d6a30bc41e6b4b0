import { formatMiB } from './big-payload-case.ts';
import type { FunctionSettings } from './function-host.ts';
import { lambdaNodeFlags } from './lambda-node-flags.ts';
import type { PollerTaskSettings } from './poller-process.ts';

const payloadLimit = (environment: Readonly<Record<string, string>>) =>
  environment.PAYLOAD_MAX_BYTES
    ? `, PAYLOAD_MAX_BYTES ${formatMiB(Number(environment.PAYLOAD_MAX_BYTES))}`
    : '';

/**
 * The line `npm start` prints about the limits a local component runs within: the worker function's memory (with the
 * V8 flags Lambda derives from it), timeout and payload limit, or the poller task's memory, and what happens past them.
 *
 * @internal
 */
export function describeLimits(
  stage: string,
  component: { readonly worker: FunctionSettings } | { readonly poller: PollerTaskSettings },
): string {
  if ('worker' in component) {
    const { memorySizeMb, timeoutMs, environment } = component.worker;
    return `Worker function (stage ${stage}): ${memorySizeMb} MB (${lambdaNodeFlags(memorySizeMb).slice(1).join(' ')}), timeout ${timeoutMs / 1000} s${payloadLimit(environment)}; each execution environment is a child process, killed above ${memorySizeMb} MB (Runtime.OutOfMemory) or at the timeout`;
  }
  const { memoryMiB, environment } = component.poller;
  return `Poller task (stage ${stage}): ${memoryMiB} MiB${payloadLimit(environment)}; bin/poller.ts runs in a child process, killed above ${memoryMiB} MiB (OutOfMemoryError: Container killed due to memory usage, exit 137) and replaced`;
}
