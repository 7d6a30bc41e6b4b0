import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { FunctionHostOptions } from './function-host.ts';
import type { Environment, HostState, Ready } from './function-host-state.ts';
import type { RuntimeMessage } from './function-runtime.ts';
import { lambdaNodeFlags } from './lambda-node-flags.ts';

/** Lambda's limit on the Init phase of an on-demand function. */
const INIT_TIMEOUT_MS = 10_000;

/** How Go's os/exec, which Lambda's runtime API reports through, names a process's end. @internal */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  const names: Partial<Record<NodeJS.Signals, string>> = {
    SIGKILL: 'killed',
    SIGABRT: 'aborted (core dumped)',
    SIGSEGV: 'segmentation fault (core dumped)',
    SIGTERM: 'terminated',
  };
  return signal ? `signal: ${names[signal] ?? signal}` : `exit status ${code}`;
}

/** Spawns a new execution environment (a cold start) and tracks it until it exits. @internal */
export function startEnvironment(host: HostState): Environment {
  const { options } = host;
  const id = host.nextId++;
  const child = spawn(process.execPath, [...lambdaNodeFlags(options.memorySizeMb), host.bundle], {
    env: host.environmentVariables,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const environment: Environment = {
    id,
    child,
    pid: child.pid as number,
    spawnedAt: performance.now(),
    heapOutOfMemory: false,
    ready: new Promise<Ready>((resolve) => {
      child.on('message', (message: RuntimeMessage) => {
        if (message.type === 'ready')
          resolve({ type: 'ready', initDurationMs: performance.now() - environment.spawnedAt });
        else if (message.type === 'init-error') resolve(message);
        else environment.onMessage?.(message);
      });
      child.once('exit', (code, signal) =>
        resolve({
          type: 'init-error',
          errorType: 'Runtime.ExitError',
          errorMessage: `Runtime exited with error: ${describeExit(code, signal)}`,
        }),
      );
    }),
    exited: new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    }),
  };
  child.on('error', () => {}); // a failed spawn ends as an exit, reported by the invocation
  forwardOutput(environment, options.onOutput);
  host.all.add(environment);
  void environment.exited.then(() => {
    host.all.delete(environment);
    const at = host.idle.indexOf(environment);
    if (at >= 0) host.idle.splice(at, 1);
  });
  host.stats.coldStarts += 1;
  return environment;
}

/** Hands each line an environment writes to the listener, and notes V8's heap-limit abort. */
function forwardOutput(environment: Environment, onOutput: FunctionHostOptions['onOutput']): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const lines = createInterface({
      input: environment.child[stream] as NodeJS.ReadableStream,
      crlfDelay: Infinity,
    });
    lines.on('line', (line) => {
      if (stream === 'stderr' && line.includes('JavaScript heap out of memory'))
        environment.heapOutOfMemory = true;
      onOutput?.(line, { stream, environmentId: environment.id });
    });
  }
}

/** Kills an environment (SIGKILL) and takes it off the idle list. @internal */
export function killEnvironment(host: HostState, environment: Environment): void {
  const at = host.idle.indexOf(environment);
  if (at >= 0) host.idle.splice(at, 1);
  if (environment.child.exitCode === null && environment.child.signalCode === null)
    environment.child.kill('SIGKILL');
}

/** Ends an environment at the host's stop: SIGTERM, then SIGKILL if it is still there after 3 s. @internal */
export async function stopEnvironment(environment: Environment): Promise<void> {
  environment.child.kill('SIGTERM');
  const gone = await Promise.race([
    environment.exited.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000).unref()),
  ]);
  if (!gone) {
    environment.child.kill('SIGKILL');
    await once(environment.child, 'exit').catch(() => {});
  }
}

/**
 * The init phase of a new environment: ready, or why not (an init error, an exit, Lambda's 10 s limit).
 *
 * @internal
 */
export async function initialize(environment: Environment): Promise<Ready> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Ready>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          type: 'init-error',
          errorType: 'Runtime.InitTimeout',
          errorMessage: `INIT_REPORT Init Duration: ${INIT_TIMEOUT_MS.toFixed(2)} ms Phase: init Status: timeout`,
        }),
      INIT_TIMEOUT_MS,
    );
  });
  const ready = await Promise.race([environment.ready, timedOut]);
  clearTimeout(timer);
  return ready;
}
