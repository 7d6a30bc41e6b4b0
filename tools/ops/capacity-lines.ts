import type { CapacityResult } from '../../lib/stores/postgres/capacity.ts';
import { table } from './output.ts';

/**
 * The terms of a capacity result as a table, the binding one marked, and the safe concurrency: the lines both
 * stores' `capacity` print.
 *
 * @internal
 */
export function capacityLines(
  result: Pick<CapacityResult, 'terms' | 'binding' | 'safeConcurrency'>,
): string[] {
  return [
    table(
      ['term', 'value', 'formula', ''],
      result.terms.map((t) => [
        t.term,
        Number(t.value.toFixed(2)),
        t.formula,
        t.term === result.binding ? '← binding' : ' ',
      ]),
    ),
    `Safe worker concurrency: ${result.safeConcurrency} (binding: ${result.binding}).`,
  ];
}
