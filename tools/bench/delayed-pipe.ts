import { performance } from 'node:perf_hooks';

/**
 * Forwards chunks to `write` after `delayMs`, in the order they came: a model of one direction of a network
 * path with a fixed one-way latency. Chunks that arrive while earlier ones wait are held for their own full
 * delay and released together when due, so pipelined writes stay one round trip. With `delayMs` 0 every chunk
 * is written at once.
 *
 * Node's timers have millisecond resolution, so a chunk waits its delay rounded up to the next timer tick
 * (the bench measures and prints the round trip time it got).
 */
export function delayedPipe(delayMs: number, write: (chunk: Buffer) => void): (chunk: Buffer) => void {
  if (delayMs <= 0) return write;
  const queue: Array<{ due: number; chunk: Buffer }> = [];
  let timer: NodeJS.Timeout | undefined;
  const release = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && (queue[0]?.due ?? Number.POSITIVE_INFINITY) <= now) {
      write((queue.shift() as { chunk: Buffer }).chunk);
    }
    schedule(now);
  };
  const schedule = (now: number) => {
    const head = queue[0];
    if (timer || !head) return;
    timer = setTimeout(release, Math.max(0, head.due - now));
  };
  return (chunk) => {
    const now = performance.now();
    queue.push({ due: now + delayMs, chunk });
    schedule(now);
  };
}
