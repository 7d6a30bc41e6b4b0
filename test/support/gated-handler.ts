/**
 * A copy of `handler` whose `handle` waits at its start until `release()`: a delivery in flight (its key claimed or
 * its lease held), its handler slow for as long as the test wants. `entered()` says whether it started.
 */
export function gatedHandler<H extends { handle(context: never): Promise<unknown> }>(handler: H) {
  let release = () => {};
  let entered = false;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const gated: H = {
    ...handler,
    async handle(context: never) {
      entered = true;
      await gate;
      return handler.handle(context);
    },
  };
  return { handler: gated, release: () => release(), entered: () => entered };
}
