import type { ChildProcess } from 'node:child_process';
import type { FunctionHostOptions, FunctionHostStats } from './function-host.ts';
import type { RuntimeMessage } from './function-runtime.ts';

/** Bytes in a MiB (Lambda's MB). @internal */
export const MIB = 1024 * 1024;

/** How an environment's init phase ended. @internal */
export type Ready =
  | { readonly type: 'ready'; readonly initDurationMs: number }
  | Extract<RuntimeMessage, { type: 'init-error' }>;

/** One execution environment: a child process running the bundle. @internal */
export interface Environment {
  readonly id: number;
  readonly child: ChildProcess;
  readonly pid: number;
  /** When it was spawned (`performance.now()`): its init duration counts from there, as Lambda's covers the runtime's start. */
  readonly spawnedAt: number;
  readonly ready: Promise<Ready>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** V8 reported its heap exhausted on stderr (the process aborts next). */
  heapOutOfMemory: boolean;
  onMessage?: (message: RuntimeMessage) => void;
}

/**
 * What a host's steps share: its options, its bundle, its environments (all, and the idle ones) and its stats.
 *
 * @internal
 */
export interface HostState {
  readonly options: FunctionHostOptions;
  readonly bundle: string;
  readonly region: string;
  readonly limitBytes: number;
  readonly environmentVariables: NodeJS.ProcessEnv;
  readonly stats: FunctionHostStats;
  readonly idle: Environment[];
  readonly all: Set<Environment>;
  nextId: number;
}

/** A new host's state: no environment yet, the variables Lambda's runtime sets. @internal */
export function createHostState(options: FunctionHostOptions, bundle: string): HostState {
  const region = options.region ?? 'us-east-1';
  return {
    options,
    bundle,
    region,
    limitBytes: options.memorySizeMb * MIB,
    environmentVariables: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      // What Lambda's runtime sets in every environment.
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_LAMBDA_FUNCTION_NAME: options.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memorySizeMb),
      TZ: 'UTC',
      ...options.environment,
    },
    stats: {
      invocations: 0,
      coldStarts: 0,
      errors: 0,
      timeouts: 0,
      outOfMemory: 0,
      peakMemoryMb: 0,
      memoryPerInvocationMb: [],
    },
    idle: [],
    all: new Set<Environment>(),
    nextId: 1,
  };
}
