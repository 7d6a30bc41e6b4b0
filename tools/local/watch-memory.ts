import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { readProcessMemory } from './process-memory.ts';

/** Options of {@link watchMemory}. */
export interface WatchMemoryOptions {
  /** A child process of this one. */
  readonly pid: number;
  /** The limit: the process is killed (SIGKILL) once its peak passes it. */
  readonly limitBytes: number;
  /** Called once, with the peak, after the process was killed for passing `limitBytes`. */
  onExceeded(peakBytes: number): void;
}

/** A running watch, returned by {@link watchMemory}. */
export interface MemoryWatch {
  /**
   * Whether the sampler killed the process for its memory. Known as soon as the kill is sent — before the process's
   * exit is seen here, and before `onExceeded` runs — so an exit by SIGKILL can be told apart from any other.
   */
  exceeded(): boolean;
  /** Reads the counters now: the peak so far (bytes), or undefined when the process is gone. */
  check(): number | undefined;
  /** Stops watching; returns the peak last read. */
  stop(): number;
}

/** How often the sampler reads each watched process's counters. */
const SAMPLE_INTERVAL_MS = 10;
/** Watches at once (a slot each in the shared flags). */
const SLOTS = 1024;

// The sampler thread: plain JavaScript (a worker thread does not inherit tsx's loader), reading /proc and killing.
// It checks a process's start time before killing it, so a PID the kernel gave to another process is never signalled.
const SAMPLER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const killed = new Int32Array(workerData.flags);
const watched = new Map();
const startTime = (pid) => {
  try {
    const stat = readFileSync('/proc/' + pid + '/stat', 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch { return undefined; }
};
const peakOf = (pid) => {
  try {
    const status = readFileSync('/proc/' + pid + '/status', 'utf8');
    const hwm = /^VmHWM:\\s+(\\d+) kB$/m.exec(status);
    const rss = /^VmRSS:\\s+(\\d+) kB$/m.exec(status);
    if (!hwm || !rss) return undefined;
    return Math.max(Number(hwm[1]), Number(rss[1])) * 1024;
  } catch { return undefined; }
};
setInterval(() => {
  for (const [pid, watch] of watched) {
    const peak = peakOf(pid);
    if (peak === undefined || peak <= watch.limitBytes) continue;
    watched.delete(pid);
    if (startTime(pid) !== watch.startTime) continue;
    Atomics.store(killed, watch.slot, 1);
    try { process.kill(pid, 'SIGKILL'); } catch {}
    parentPort.postMessage({ type: 'exceeded', pid, peakBytes: peak });
  }
}, ${SAMPLE_INTERVAL_MS});
parentPort.on('message', (message) => {
  if (message.type === 'watch') watched.set(message.pid, message);
  else {
    watched.delete(message.pid);
    // From here on this slot's flag is never written: it may be given to another watch.
    parentPort.postMessage({ type: 'unwatched', slot: message.slot });
  }
});
`;

let sampler: Worker | undefined;
const listeners = new Map<number, (peakBytes: number) => void>();
/** One flag per watch, set by the sampler before it kills: shared memory, read without waiting for a message. */
const killedFlags = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
const freeSlots = Array.from({ length: SLOTS }, (_, slot) => SLOTS - 1 - slot);

/** The sampler thread, started on first use, never keeping the process alive. */
function samplerThread(): Worker {
  if (sampler) return sampler;
  const thread = new Worker(SAMPLER_SOURCE, { eval: true, workerData: { flags: killedFlags.buffer } });
  thread.on(
    'message',
    (message: { type: 'exceeded'; pid: number; peakBytes: number } | { type: 'unwatched'; slot: number }) => {
      if (message.type === 'unwatched') {
        freeSlots.push(message.slot);
        return;
      }
      const listener = listeners.get(message.pid);
      listeners.delete(message.pid);
      listener?.(message.peakBytes);
    },
  );
  // After the listener: attaching one refs the thread's port again.
  thread.unref();
  sampler = thread;
  return thread;
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat): with the PID, it names one process. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Holds process `pid` to a memory limit as a memory cgroup does: a sampler thread reads its high-water mark
 * (`VmHWM`, see `readProcessMemory`) every 10 ms and kills it (SIGKILL) the first time the peak passes `limitBytes`,
 * then `onExceeded` is called. Reading the kernel's peak, not the current size, means a spike between two reads is
 * not missed; only the kill waits for the next read (the process may grow further, and run on, for up to one
 * interval). The sampler is a thread of its own so that a busy event loop here (fauxqs serving a large object) does
 * not delay it.
 */
export function watchMemory(options: WatchMemoryOptions): MemoryWatch {
  const { pid, limitBytes } = options;
  let peakBytes = 0;
  let watching = true;
  const check = (): number | undefined => {
    const memory = readProcessMemory(pid);
    if (!memory) return undefined;
    peakBytes = Math.max(peakBytes, memory.peakBytes, memory.rssBytes);
    return peakBytes;
  };
  const startTime = startTimeOf(pid);
  const slot = freeSlots.pop();
  if (slot === undefined) throw new Error(`watchMemory: more than ${SLOTS} processes watched at once`);
  Atomics.store(killedFlags, slot, 0);
  listeners.set(pid, (peak) => {
    peakBytes = Math.max(peakBytes, peak);
    if (watching) {
      watching = false;
      options.onExceeded(peak);
    }
  });
  samplerThread().postMessage({ type: 'watch', pid, limitBytes, startTime, slot });
  let exceeded = false;
  let released = false;
  return {
    check,
    exceeded: () => {
      if (!released) exceeded = Atomics.load(killedFlags, slot) === 1;
      return exceeded;
    },
    stop() {
      if (watching) {
        watching = false;
        listeners.delete(pid);
      }
      if (!released) {
        // The flag as it stands: a kill sent before the unwatch reached the sampler still counts. The slot is free
        // again once the sampler confirms it dropped the watch.
        exceeded = Atomics.load(killedFlags, slot) === 1;
        released = true;
        sampler?.postMessage({ type: 'unwatch', pid, slot });
      }
      return peakBytes;
    },
  };
}
