import { loadavg } from 'node:os';
import { benchPollerPeer } from './poller-peer.ts';
import { withQueueRig } from './queue-rig.ts';
import { renderPollerPeer } from './render-poller-peer.ts';
import { renderScaleCurve } from './render-scale-curve.ts';
import { benchScaleCurve } from './scale-curve.ts';

/** The queue lines' options (`--network-delay-ms`, `--rounds`, `--peer-messages`, `--scale-messages`). */
export interface QueueLineOptions {
  readonly delayMs: number;
  readonly rounds: number;
  /** Measured messages per run of the poller-vs-peer line. */
  readonly peerMessages: number;
  /** Measured messages per record in flight per run of the scale curve. */
  readonly scaleMessagesPerRecord: number;
}

/** The header of a queue line: the machine's load and the server, which a reader needs to weigh the figures. */
function header(server: string): string {
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');
  return `sqs-inbox-worker bench — ${server}, Node ${process.version}, load average ${load} (1 / 5 / 15 min, at the end)`;
}

/**
 * `npm run bench -- --only poller-peer` (this poller against sqs-consumer) or `--only scale` (the scale curve): the
 * line alone on its rig (`queue-rig.ts`). Prints the figures on stdout, progress on stderr.
 */
export async function runQueueLineAlone(
  line: 'poller-peer' | 'scale',
  options: QueueLineOptions,
): Promise<void> {
  await withQueueRig(options.delayMs, async (rig) => {
    if (line === 'poller-peer') {
      rig.log('poller vs sqs-consumer: a warm-up run of each side, then interleaved rounds');
      const rows = await benchPollerPeer(rig, {
        rounds: options.rounds,
        messages: options.peerMessages,
        warmupMessages: 100,
      });
      const report = renderPollerPeer(rows, { rig, rounds: options.rounds, messages: options.peerMessages });
      console.log(`${header(rig.server)}\n${report}`);
    } else {
      rig.log(
        'scale curve: the poller and the minimal transaction without a queue at 1, 2, 4, 8 records in flight',
      );
      const points = await benchScaleCurve(rig, {
        rounds: options.rounds,
        messagesPerRecord: options.scaleMessagesPerRecord,
      });
      const report = renderScaleCurve(points, {
        rig,
        rounds: options.rounds,
        messagesPerRecord: options.scaleMessagesPerRecord,
      });
      console.log(`${header(rig.server)}\n${report}`);
    }
  });
}
