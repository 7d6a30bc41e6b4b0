/**
 * Runs one database probe for the breaker state machine (the `probe` observation of `stepBreaker`): `'ok'` when
 * `probe` resolves within `timeoutMs`, `'failed'` when it rejects or does not answer in time (an `Error` "no answer
 * within N ms"), after `onFailure` is told why. Never throws. Shared by the event source mapping's breaker and the
 * poller's database pause.
 *
 * @internal
 */
export async function runProbe(
  probe: () => Promise<unknown>,
  timeoutMs: number,
  onFailure: (error: unknown) => void,
): Promise<'ok' | 'failed'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch (error) {
    onFailure(error);
    return 'failed';
  } finally {
    clearTimeout(timer);
  }
}
