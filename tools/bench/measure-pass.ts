import type postgres from 'postgres';
import { benchConfig, type ConfigResult, medianRun, pairedRatio, since } from './bench-config.ts';
import type { BenchMode } from './bench-lanes.ts';
import type { LaneThreads } from './lane-threads.ts';
import { REFERENCE_MODE } from './render-report.ts';
import type { RoundTripProxy } from './round-trip-proxy.ts';

/** What every pass of a bench run shares: its database, proxy, lane threads, run id and log. @internal */
export interface BenchRun {
  readonly warmupMessages: number;
  readonly runId: string;
  readonly admin: postgres.Sql;
  readonly url: string;
  readonly proxiedUrl: string;
  readonly proxy: RoundTripProxy;
  readonly threads: LaneThreads;
  /** When the bench started (`performance.now()`), for the log's timestamps. */
  readonly started: number;
  readonly log: (line: string) => void;
}

/** One pass of the throughput lines: its modes at each concurrency, optionally through the delaying proxy. @internal */
export interface BenchPass {
  readonly label: string;
  readonly modes: readonly BenchMode[];
  readonly concurrencies: readonly number[];
  readonly rounds: number;
  readonly messages: number;
  readonly network?: { url: string; proxy: RoundTripProxy };
}

/**
 * Each configuration runs `rounds` times, the modes interleaved, and the order of the modes rotates from round
 * to round: whichever mode runs second in a round was measured ~5 % slower, whatever the mode. The round with
 * the median throughput is shown, and ratios are the median of the ratios within a round: a single run on a
 * shared 2-core machine drifts by ±10 %.
 *
 * @internal
 */
export async function measurePass(bench: BenchRun, pass: BenchPass): Promise<ConfigResult[]> {
  const results: ConfigResult[] = [];
  for (const concurrency of pass.concurrencies) {
    const byMode = await runRounds(bench, pass, concurrency);
    for (const mode of pass.modes) results.push(medianRow(byMode, mode));
  }
  return results;
}

/** Every round of one concurrency, the modes' order rotating: the runs of each mode. */
async function runRounds(
  bench: BenchRun,
  pass: BenchPass,
  concurrency: number,
): Promise<Map<BenchMode, ConfigResult[]>> {
  const byMode = new Map<BenchMode, ConfigResult[]>();
  for (let round = 1; round <= pass.rounds; round += 1) {
    const shift = (round - 1) % pass.modes.length;
    for (const mode of [...pass.modes.slice(shift), ...pass.modes.slice(0, shift)]) {
      const result = await benchConfig({
        mode,
        concurrency,
        messages: pass.messages,
        warmupMessages: bench.warmupMessages,
        runId: `${bench.runId}-${pass.network ? 'n' : 'l'}${round}`,
        admin: bench.admin,
        directUrl: bench.url,
        proxiedUrl: bench.proxiedUrl,
        proxy: bench.proxy,
        threads: bench.threads,
        ...(pass.network ? { network: pass.network } : {}),
      });
      byMode.set(mode, [...(byMode.get(mode) ?? []), result]);
      bench.log(
        `[${since(bench.started)}] ${pass.label}: ${mode} × ${concurrency}, round ${round}: ${result.messagesPerSecond.toFixed(0)} msgs/s, ${result.roundTripsPerMessage.toFixed(2)} RT/msg`,
      );
    }
  }
  return byMode;
}

/** A mode's row: its median run, every statement of its rounds, and its paired ratios. */
function medianRow(byMode: ReadonlyMap<BenchMode, ConfigResult[]>, mode: BenchMode): ConfigResult {
  const runsOf = (of: BenchMode) => byMode.get(of) ?? [];
  const reference = REFERENCE_MODE[mode];
  return {
    ...medianRun(runsOf(mode)),
    // The pinning audit covers every statement any round sent.
    statements: runsOf(mode).flatMap((run) => run.statements ?? []),
    ...(reference && byMode.has(reference)
      ? { vsBaseline: pairedRatio(runsOf(mode), runsOf(reference)) }
      : {}),
    ...(mode === 'per-batch' && byMode.has('per-message')
      ? { vsPerMessage: pairedRatio(runsOf(mode), runsOf('per-message')) }
      : {}),
  };
}
