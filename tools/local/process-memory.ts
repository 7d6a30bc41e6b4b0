import { readFileSync, writeFileSync } from 'node:fs';

/** A process's memory as the kernel counts it (`/proc/<pid>/status`), in bytes. */
export interface ProcessMemory {
  /** Resident set size now (`VmRSS`). */
  readonly rssBytes: number;
  /** The most it was resident since it started or since {@link resetPeakMemory} (`VmHWM`). */
  readonly peakBytes: number;
}

const field = (status: string, name: string): number | undefined => {
  const kb = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1];
  return kb === undefined ? undefined : Number(kb) * 1024;
};

/**
 * Reads the memory of process `pid` from `/proc/<pid>/status` (Linux). Undefined when the process is gone (or is a
 * zombie, which has no memory left). The peak is the kernel's high-water mark, not a sample: a spike between two
 * reads still shows in the next one.
 *
 * @throws Error when `/proc` has no such file for a live process (not Linux).
 */
export function readProcessMemory(pid: number): ProcessMemory | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' ||
      (error as NodeJS.ErrnoException).code === 'ESRCH'
    )
      return undefined;
    throw error;
  }
  const rssBytes = field(status, 'VmRSS');
  const peakBytes = field(status, 'VmHWM');
  if (rssBytes === undefined || peakBytes === undefined) return undefined; // a zombie: exited, not reaped yet
  return { rssBytes, peakBytes };
}

/**
 * Starts the high-water mark of `pid` anew at its current resident size (`echo 5 > /proc/<pid>/clear_refs`), so the
 * next {@link readProcessMemory} peak is that of what ran since. False when the kernel refuses it (then the peak
 * stays that of the process's life).
 */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Whether this machine has `/proc/<pid>/status` (Linux): the local memory limits need it. */
export function canReadProcessMemory(): boolean {
  try {
    return readProcessMemory(process.pid) !== undefined;
  } catch {
    return false;
  }
}
