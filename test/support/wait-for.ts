import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` every `pollMs` until it holds and resolves with the time it did (epoch ms); rejects after
 * `timeoutMs`, naming `what` it waited for.
 */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  pollMs = 50,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return Date.now();
    await sleep(pollMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
