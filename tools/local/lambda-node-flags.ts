/**
 * The V8 flags Lambda's Node.js runtime starts a function of `memorySizeMb` with: a young generation of a tenth of
 * the memory (two semi-spaces of a twentieth each) and an old generation of the other nine tenths. A process run
 * with them collects garbage as the function would.
 *
 * @internal
 */
export function lambdaNodeFlags(memorySizeMb: number): string[] {
  const newSpace = Math.floor(memorySizeMb / 10);
  return [
    '--expose-gc',
    `--max-semi-space-size=${Math.floor(newSpace / 2)}`,
    `--max-old-space-size=${memorySizeMb - newSpace}`,
  ];
}
