import type { ColdStartFloors, FloorResult, PairedMs } from './cold-start-floor.ts';
import { formatKiB, formatMs, verdict } from './statistics.ts';

/** A store entry's cold start ≤ its floor's + this many milliseconds (source maps off; on is reported beside it). */
export const COLD_START_OVER_FLOOR_MS = 20;

const signed = (ms: number) => `${ms < 0 ? '−' : '+'}${formatMs(Math.abs(ms))}`;
const withRange = ({ medianMs, p25Ms, p75Ms }: PairedMs) =>
  `${signed(medianMs)} (interquartile ${signed(p25Ms)} to ${signed(p75Ms)})`;

/** What the entry loads at cold start beyond its floor, per package, largest first. */
function beyondFloor({ entry, floor }: FloorResult): string {
  const floorBytes = new Map(floor.coldByPackage.map(({ name, bytes }) => [name, bytes]));
  return entry.coldByPackage
    .map(({ name, bytes }) => ({ name, bytes: bytes - (floorBytes.get(name) ?? 0) }))
    .filter(({ bytes }) => bytes >= 1024)
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 8)
    .map(({ name, bytes }) => `${name} ${formatKiB(bytes)}`)
    .join(', ');
}

/** The cold start of each store entry over its floor, with the bundles' sizes and what the entry adds. */
export function renderColdStartFloors({ runs, stores }: ColdStartFloors): string {
  return [
    `cold start over the floor (an empty ESM handler that imports and makes the same database client, bundled the ` +
      `same way: tools/bench/cold-floor-*.ts), ${runs} interleaved rounds of fresh processes, medians of the ` +
      `rounds' paired differences:`,
    ...stores.flatMap((result) => [
      `  ${result.store}: entry ${formatKiB(result.entry.bytes)} deployed, ${formatKiB(result.entry.coldBytes)} in ` +
        `${result.entry.coldFiles} files at cold start (maps ${formatKiB(result.entry.mapBytes)}); floor ` +
        `${formatKiB(result.floor.coldBytes)} in ${result.floor.coldFiles} files, ${withRange(result.floorOverBare)} ` +
        `over an empty module's import`,
      `    entry over floor, wall: ${withRange(result.overFloor)} source maps off, ` +
        `${withRange(result.overFloorWithSourceMaps)} with --enable-source-maps on both`,
      `    entry over floor, CPU (every thread): ${withRange(result.cpuOverFloor)} source maps off, ` +
        `${withRange(result.cpuOverFloorWithSourceMaps)} on`,
      `    of which, CPU: the libraries every worker makes before its first record (Powertools Logger, Metrics, ` +
        `batch processor, zod; ${formatKiB(result.libraries.bundle.coldBytes - result.floor.coldBytes)}) ` +
        `${withRange(result.libraries.cpuOverFloor)}, the engine, its configuration and the example handlers ` +
        `${withRange(result.libraries.entryCpuOver)}`,
      `    loaded at cold start beyond the floor: ${beyondFloor(result)}`,
    ]),
  ].join('\n');
}

/** The target rows: each store entry's cold start over its floor, source maps off, then on. */
export function coldStartFloorTargetRows({ runs, stores }: ColdStartFloors): string[][] {
  return stores.flatMap((result) => [
    [
      `${result.store} entry cold start ≤ floor + ${COLD_START_OVER_FLOOR_MS} ms, source maps off (median of ${runs} paired runs)`,
      `${withRange(result.overFloor)}; CPU ${signed(result.cpuOverFloor.medianMs)}`,
      verdict(result.overFloor.medianMs <= COLD_START_OVER_FLOOR_MS),
    ],
    [
      `${result.store} entry cold start ≤ floor + ${COLD_START_OVER_FLOOR_MS} ms, source maps on`,
      `${withRange(result.overFloorWithSourceMaps)}; CPU ${signed(result.cpuOverFloorWithSourceMaps.medianMs)}`,
      verdict(result.overFloorWithSourceMaps.medianMs <= COLD_START_OVER_FLOOR_MS),
    ],
  ]);
}
