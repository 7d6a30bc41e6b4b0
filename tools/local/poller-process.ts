import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../lambda/errors.ts';
import { buildPoller } from '../build/build-poller.ts';
import { canReadProcessMemory } from './process-memory.ts';
import { watchMemory } from './watch-memory.ts';

const MIB = 1024 * 1024;
/**
 * Loaded before the poller, as the only addition to what its image runs: when this process ends without stopping it
 * (killed, or exited through another path), the IPC channel closes and the poller gets the SIGTERM ECS would send,
 * and drains and exits, instead of polling on as an orphan.
 */
const EXIT_WITH_PARENT =
  "data:text/javascript,process.on('disconnect',()=>process.kill(process.pid,'SIGTERM'));process.channel?.unref();";
/** A task still running this long after it was started has started, even if it logged nothing. */
const STARTED_WITHOUT_LINE_MS = 10_000;

/** The poller entry the container image runs (the Dockerfile bundles it). */
export const POLLER_ENTRY = fileURLToPath(new URL('../../bin/poller.ts', import.meta.url));

/** How one task (one poller process) ended. */
export interface PollerTaskExit {
  /** 1, 2, … in the order the tasks were started. */
  readonly task: number;
  /** The container's exit code (137 after a SIGKILL, as ECS shows it). */
  readonly exitCode: number;
  /** ECS's stopped reason of an out-of-memory kill (`OutOfMemoryError: Container killed due to memory usage`). */
  readonly stoppedReason?: string;
  readonly outOfMemory: boolean;
  /** Its peak resident memory, MiB. */
  readonly peakMiB: number;
  /** Ended by {@link PollerTasks.stop} (a deploy, Ctrl-C), not by itself or a kill. */
  readonly stopped: boolean;
}

/** Options of {@link startPollerTasks}. */
export interface PollerTasksOptions {
  /** The poller's entry. @default bin/poller.ts */
  readonly entry?: string;
  /** The task's memory (`Memory` of the task definition), MiB: the container is killed above it. */
  readonly memoryMiB: number;
  /** The container's variables (the synthesized task definition's, pointed at the local stack). */
  readonly environment: Readonly<Record<string, string>>;
  /** The container's `stopTimeout`: SIGKILL this long after SIGTERM. @default 30 s + 10 s, the poller's drain + margin */
  readonly stopTimeoutMs?: number;
  /** Wait before a replacement task starts after one ended by itself. @default 1000 */
  readonly restartDelayMs?: number;
  /** Every line a task writes (its logs). */
  readonly onOutput?: (line: string, source: { stream: 'stdout' | 'stderr'; task: number }) => void;
  /** Every task that ended. */
  readonly onExit?: (exit: PollerTaskExit) => void;
}

/** A poller task as {@link startPollerTasks} runs it: its entry, memory, variables and stop timeout. */
export type PollerTaskSettings = Pick<
  PollerTasksOptions,
  'entry' | 'memoryMiB' | 'environment' | 'stopTimeoutMs'
>;

/** Counters of the tasks (a live view). */
export interface PollerTasksStats {
  tasksStarted: number;
  /** Tasks killed for memory. */
  outOfMemory: number;
  /** Tasks that ended by themselves (a crash), not stopped nor killed for memory. */
  crashes: number;
  /** The highest peak of a task, MiB. */
  peakMemoryMiB: number;
  /** From the `poller_stopped` lines of the tasks that drained: messages received, deleted, handed back. */
  received: number;
  deleted: number;
  released: number;
}

/** The running poller tasks, returned by {@link startPollerTasks}. */
export interface PollerTasks {
  readonly memoryMiB: number;
  readonly stats: Readonly<PollerTasksStats>;
  /** Stops the running task as ECS does (SIGTERM, SIGKILL after the stop timeout); resolves with its exit. */
  stop(): Promise<PollerTaskExit | undefined>;
}

/**
 * Runs the poller as the Fargate service runs it, within its task's memory: `bin/poller.ts` bundled as its image
 * bundles it (`buildPoller`), run with `node` as the image's CMD (`NODE_ENV=production`, source maps), with the
 * container's variables only. Its resident memory is read every 10 ms (`watchMemory`: the kernel's high-water mark,
 * so a spike between reads is seen); above the task's memory the process is killed (SIGKILL) and reported as ECS reports
 * it — `OutOfMemoryError: Container killed due to memory usage`, exit code 137 — and, as the service replaces a task
 * that stopped, a new one is started after `restartDelayMs`. A task that crashes is replaced the same way.
 *
 * Resolves once the first task logged `poller_started` (or ran 10 s without ending, when its logs are quieter than INFO).
 *
 * @throws ConfigError with the poller's own message when the first task exits before it started (a bad variable,
 * a queue it may not read).
 */
export async function startPollerTasks(options: PollerTasksOptions): Promise<PollerTasks> {
  if (!canReadProcessMemory()) {
    throw new Error(
      'The local poller reads its memory from /proc/<pid>/status, which this system lacks: run npm start on Linux (or in a Linux container)',
    );
  }
  const workdir = await bundlePoller(options.entry ?? POLLER_ENTRY);
  // A process that ends without stopping the tasks (Ctrl-C's exit hooks, a crash) removes the bundle all the same.
  const removeBundle = () => rmSync(workdir, { recursive: true, force: true });
  process.once('exit', removeBundle);
  const tasks: TasksState = {
    options,
    workdir,
    stats: {
      tasksStarted: 0,
      outOfMemory: 0,
      crashes: 0,
      peakMemoryMiB: 0,
      received: 0,
      deleted: 0,
      released: 0,
    },
    stopping: false,
    current: undefined,
  };
  const removeWorkdir = async () => {
    process.off('exit', removeBundle);
    await rm(workdir, { recursive: true, force: true });
  };
  const first = startTask(tasks);
  if (!(await first.started)) {
    tasks.stopping = true;
    await removeWorkdir();
    throw new ConfigError(
      first.lastError().replace(/^poller not started: /, '') || 'the poller exited before it started',
    );
  }
  return {
    memoryMiB: options.memoryMiB,
    stats: tasks.stats,
    async stop() {
      const exit = await stopCurrentTask(tasks);
      await removeWorkdir();
      return exit;
    },
  };
}

/** The poller bundled as its image bundles it, in a new temporary folder (removed again if the build fails). */
async function bundlePoller(entry: string): Promise<string> {
  const workdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-poller-'));
  try {
    await buildPoller(entry, workdir);
  } catch (error) {
    await rm(workdir, { recursive: true, force: true });
    throw error;
  }
  return workdir;
}

/** What the tasks of one {@link startPollerTasks} share: the options, the bundle, the stats, the running task. */
interface TasksState {
  readonly options: PollerTasksOptions;
  readonly workdir: string;
  readonly stats: PollerTasksStats;
  stopping: boolean;
  current: { child: ChildProcess; exited: Promise<PollerTaskExit> } | undefined;
}

/** Starts one task; `started` settles when it logged `poller_started` or ended before. */
function startTask(tasks: TasksState) {
  const { options, stats } = tasks;
  const task = stats.tasksStarted + 1;
  stats.tasksStarted = task;
  const child = spawn(process.execPath, ['--import', EXIT_WITH_PARENT, join(tasks.workdir, 'poller.mjs')], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      // The image's ENV (Dockerfile).
      NODE_ENV: 'production',
      NODE_OPTIONS: '--enable-source-maps',
      ...options.environment,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const started = startSignal();
  const output = readTaskOutput(tasks, child, task, started.resolve);
  const exited = watchTask(tasks, child, task, started.resolve);
  tasks.current = { child, exited };
  void exited.then(async (exit) => {
    try {
      options.onExit?.(exit);
    } catch {
      // a listener's error is not the task's
    }
    if (tasks.stopping) return;
    // The service replaces a task that stopped, whatever stopped it.
    await sleep(options.restartDelayMs ?? 1000);
    if (!tasks.stopping) startTask(tasks);
  });
  return { started: started.promise, lastError: output.lastError };
}

/** Whether a task started: settled by its `poller_started` line, its end, or {@link STARTED_WITHOUT_LINE_MS}. */
function startSignal(): { promise: Promise<boolean>; resolve: (started: boolean) => void } {
  let resolve!: (started: boolean) => void;
  const promise = new Promise<boolean>((settle) => {
    resolve = settle;
  });
  // Started, whatever its log level: still running after a while without the line (POWERTOOLS_LOG_LEVEL above INFO).
  const startedAnyway = setTimeout(() => resolve(true), STARTED_WITHOUT_LINE_MS);
  startedAnyway.unref();
  void promise.then(() => clearTimeout(startedAnyway));
  return { promise, resolve };
}

/** Reads a task's lines: its start, its `poller_stopped` counts, its last error, and each line for the listener. */
function readTaskOutput(
  tasks: TasksState,
  child: ChildProcess,
  task: number,
  resolveStarted: (started: boolean) => void,
): { lastError: () => string } {
  let lastError = '';
  for (const stream of ['stdout', 'stderr'] as const) {
    createInterface({ input: child[stream] as NodeJS.ReadableStream, crlfDelay: Infinity }).on(
      'line',
      (line) => {
        if (line.includes('"poller_started"')) resolveStarted(true);
        if (line.includes('"poller_stopped"')) countStopped(tasks.stats, line);
        if (stream === 'stderr' && line.trim()) lastError = line;
        tasks.options.onOutput?.(line, { stream, task });
      },
    );
  }
  return { lastError: () => lastError };
}

/**
 * Watches a task's memory (killed above the task's) and resolves with its exit, counted in the stats, once it
 * ended.
 */
function watchTask(
  tasks: TasksState,
  child: ChildProcess,
  task: number,
  resolveStarted: (started: boolean) => void,
): Promise<PollerTaskExit> {
  const { options, stats } = tasks;
  let killedForMemory = false;
  const watch = watchMemory({
    pid: child.pid as number,
    limitBytes: options.memoryMiB * MIB,
    onExceeded: () => {
      killedForMemory = true;
    },
  });
  // The task's peak so far, for the figures (the limit itself is the sampler's).
  const peakTimer = setInterval(() => {
    const peak = watch.check();
    if (peak !== undefined) stats.peakMemoryMiB = Math.max(stats.peakMemoryMiB, Math.ceil(peak / MIB));
  }, 500);
  peakTimer.unref();
  return new Promise<PollerTaskExit>((resolve) => {
    child.once('close', (code, signal) => {
      clearInterval(peakTimer);
      // The sampler's flag: set before its kill, so known even when the exit is seen before its message.
      killedForMemory ||= watch.exceeded();
      const peakMiB = killedForMemory ? options.memoryMiB : Math.ceil(watch.stop() / MIB);
      watch.stop();
      resolveStarted(false);
      const exit: PollerTaskExit = {
        task,
        exitCode: code ?? (signal === 'SIGKILL' ? 137 : signal === 'SIGTERM' ? 143 : 1),
        ...(killedForMemory
          ? { stoppedReason: 'OutOfMemoryError: Container killed due to memory usage' }
          : {}),
        outOfMemory: killedForMemory,
        peakMiB,
        stopped: tasks.stopping && !killedForMemory,
      };
      stats.peakMemoryMiB = Math.max(stats.peakMemoryMiB, peakMiB);
      if (killedForMemory) stats.outOfMemory += 1;
      else if (!tasks.stopping) stats.crashes += 1;
      resolve(exit);
    });
  });
}

/** Adds a `poller_stopped` line's counts to the stats. */
function countStopped(stats: PollerTasksStats, line: string) {
  try {
    const { received, deleted, released } = JSON.parse(line) as Record<string, number>;
    stats.received += Number(received) || 0;
    stats.deleted += Number(deleted) || 0;
    stats.released += Number(released) || 0;
  } catch {
    // not a log line
  }
}

/** Stops the running task as ECS does (SIGTERM, SIGKILL after the stop timeout); its exit, if it was running. */
async function stopCurrentTask(tasks: TasksState): Promise<PollerTaskExit | undefined> {
  tasks.stopping = true;
  const running = tasks.current;
  if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return undefined;
  running.child.kill('SIGTERM');
  const timer = setTimeout(() => running.child.kill('SIGKILL'), tasks.options.stopTimeoutMs ?? 40_000);
  const exit = await running.exited;
  clearTimeout(timer);
  return exit;
}
