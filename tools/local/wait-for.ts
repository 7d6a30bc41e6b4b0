import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `predicate` every 50 ms until it holds (true) or `timeoutMs` passed (false).
 *
 * @internal
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(50);
  }
  return false;
}
