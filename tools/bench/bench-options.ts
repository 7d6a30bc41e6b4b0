import { parseArgs } from 'node:util';
import type { BenchMode } from './bench-lanes.ts';

/** The modes of the RDS-like network pass, in the order of the first round. @internal */
export const NETWORK_MODES: readonly BenchMode[] = [
  'minimal',
  'per-message',
  'baseline',
  'per-message-prepared',
  'minimal-batch',
  'per-batch',
  'per-batch-prepared',
];

/** Every mode, as `--only` takes them. @internal */
export const ALL_MODES: readonly BenchMode[] = [...NETWORK_MODES];

const USAGE = `usage: npm run bench [-- options]
  --network-delay-ms N    RDS-like network: delay per direction of every chunk, 0 skips that pass (default 1)
  --commit-latency-ms N   RDS-like network: modelled durable-commit latency, 0 for none (default 2)
  --network-messages N    RDS-like network: measured messages per configuration (default 300, at least 10)
  --network-rounds N      RDS-like network: interleaved rounds, median shown (default 3, 1 to 9)
  --messages N            loopback: measured messages per configuration (default 1000, at least 10)
  --rounds N              loopback: interleaved rounds, mode order rotating, median shown (default 3, 1 to 9)
  --concurrency LIST      loopback: environments at once, comma-separated (default 1,2,4)
  --warmup N              warm-up messages before each configuration (default 200)
  --purge-rows N          old inbox rows the retention purge line deletes (default 100000, 1000 to 10000000)
  --only purge            run the retention purge line alone
  --only bundle           run the bundle and cold-load line alone (no database)
  --only payload-memory   run the payload-memory line alone (peak RSS per payloadRef size)
  --only dynamodb         run the DynamoDB line alone: the store's calls and write units per message vs a
                          hand-written minimal, DynamoDB Local behind a 1 ms/direction delay
  --only contention       run the contention line alone: a hot aggregate and a slow database, the poller and
                          the Lambda worker, each fixed vs adaptive
  --only poller-peer     run the poller-vs-sqs-consumer line alone: this poller and a minimal poller on sqs-consumer,
                          SQS and PostgreSQL behind --network-delay-ms, --rounds interleaved rounds
  --only scale            run the scale curve alone: the poller at 1, 2, 4, 8 records in flight, per message and per
                          batch, beside the minimal transaction without a queue (the database's own figure)
  --peer-messages N       poller-peer: measured messages per run (default 500, at least 10)
  --scale-messages N      scale: measured messages per record in flight per run, at least 50 a run (default 25, at least 5)
  --only MODES            run the throughput lines of these modes alone, with their statement audit and targets,
                          comma-separated (e.g. minimal,per-message,minimal-batch,per-batch;
                          modes: ${ALL_MODES.join(', ')})
  --help                  this text`;

/** The bench's command line, checked. @internal */
export interface BenchOptions {
  readonly messages: number;
  readonly warmupMessages: number;
  readonly concurrencies: readonly number[];
  readonly rounds: number;
  readonly networkDelayMs: number;
  readonly networkMessages: number;
  readonly networkRounds: number;
  readonly commitLatencyMs: number;
  readonly purgeRows: number;
  /** `--only poller-peer`: measured messages per run. */
  readonly peerMessages: number;
  /** `--only scale`: measured messages per record in flight per run. */
  readonly scaleMessages: number;
  /** `--only` as given. */
  readonly only: string | undefined;
  /** `--only MODES`: the throughput lines of these modes, in both passes, and nothing else. */
  readonly onlyModes: BenchMode[] | undefined;
}

/**
 * Prints what was wrong with the options and the usage, and exits 2 (nothing has started yet).
 *
 * @internal
 */
export function usageError(message: string): never {
  process.stderr.write(`bench: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/**
 * The options of `npm run bench`, from the command line: `--help` prints the usage and exits 0; an option out of
 * its range is a {@link usageError}.
 *
 * @internal
 */
export function parseBenchOptions(): BenchOptions {
  const values = readValues();
  const rounds = Number(values.rounds);
  if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 9)) {
    usageError(`--rounds must be a whole number from 1 to 9 (given ${values.rounds})`);
  }
  const network = networkOptions(values);
  const messages = Number(values.messages);
  const warmupMessages = Number(values.warmup);
  if (
    !(Number.isInteger(messages) && messages >= 10 && Number.isInteger(warmupMessages) && warmupMessages >= 0)
  ) {
    usageError(
      `--messages must be a whole number ≥ 10 and --warmup ≥ 0 (given ${values.messages}, ${values.warmup})`,
    );
  }
  const concurrencies = String(values.concurrency).split(',').map(Number);
  if (!concurrencies.every((c) => Number.isInteger(c) && c >= 1 && c <= 64)) {
    usageError(
      `--concurrency must list whole numbers from 1 to 64, e.g. 1,2,4 (given ${values.concurrency})`,
    );
  }
  const purgeRows = Number(values['purge-rows']);
  if (!(Number.isInteger(purgeRows) && purgeRows >= 1000 && purgeRows <= 10_000_000)) {
    usageError(`--purge-rows must be a whole number from 1000 to 10000000 (given ${values['purge-rows']})`);
  }
  const only = typeof values.only === 'string' ? values.only : undefined;
  const listed = only?.split(',');
  const onlyModes = listed?.every((mode) => ALL_MODES.includes(mode as BenchMode))
    ? (listed as BenchMode[])
    : undefined;
  const peerMessages = Number(values['peer-messages']);
  const scaleMessages = Number(values['scale-messages']);
  if (
    !(
      Number.isInteger(peerMessages) &&
      peerMessages >= 10 &&
      Number.isInteger(scaleMessages) &&
      scaleMessages >= 5
    )
  ) {
    usageError(
      `--peer-messages must be a whole number ≥ 10 and --scale-messages ≥ 5 (given ${values['peer-messages']}, ${values['scale-messages']})`,
    );
  }
  return {
    messages,
    warmupMessages,
    concurrencies,
    rounds,
    ...network,
    purgeRows,
    peerMessages,
    scaleMessages,
    only,
    onlyModes,
  };
}

type Values = Record<string, string | boolean | undefined>;

/** The raw values of the command line, or the usage (`--help`, exit 0), or a {@link usageError}. */
function readValues(): Values {
  let values: Values;
  try {
    ({ values } = parseArgs({
      options: {
        messages: { type: 'string', default: '1000' },
        rounds: { type: 'string', default: '3' },
        'network-delay-ms': { type: 'string', default: '1' },
        'network-messages': { type: 'string', default: '300' },
        'network-rounds': { type: 'string', default: '3' },
        warmup: { type: 'string', default: '200' },
        concurrency: { type: 'string', default: '1,2,4' },
        'commit-latency-ms': { type: 'string', default: '2' },
        'purge-rows': { type: 'string', default: '100000' },
        'peer-messages': { type: 'string', default: '500' },
        'scale-messages': { type: 'string', default: '25' },
        only: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    usageError((error as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  return values;
}

/** The RDS-like network pass's options, checked. */
function networkOptions(
  values: Values,
): Pick<BenchOptions, 'networkDelayMs' | 'networkMessages' | 'networkRounds' | 'commitLatencyMs'> {
  const networkDelayMs = Number(values['network-delay-ms']);
  if (!(Number.isFinite(networkDelayMs) && networkDelayMs >= 0 && networkDelayMs <= 100)) {
    usageError(
      `--network-delay-ms must be a number from 0 (skip that pass) to 100 (given ${values['network-delay-ms']})`,
    );
  }
  const networkMessages = Number(values['network-messages']);
  const networkRounds = Number(values['network-rounds']);
  if (
    !(
      Number.isInteger(networkMessages) &&
      networkMessages >= 10 &&
      Number.isInteger(networkRounds) &&
      networkRounds >= 1 &&
      networkRounds <= 9
    )
  ) {
    usageError(
      `--network-messages must be a whole number ≥ 10 and --network-rounds from 1 to 9 (given ${values['network-messages']}, ${values['network-rounds']})`,
    );
  }
  const commitLatencyMs = Number(values['commit-latency-ms']);
  if (!(Number.isFinite(commitLatencyMs) && commitLatencyMs >= 0 && commitLatencyMs <= 100)) {
    usageError(
      `--commit-latency-ms must be a number from 0 (no commit latency) to 100 (given ${values['commit-latency-ms']})`,
    );
  }
  return { networkDelayMs, networkMessages, networkRounds, commitLatencyMs };
}
