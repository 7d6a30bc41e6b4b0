import { PEER_CONCURRENCY, type PeerRow } from './poller-peer.ts';
import type { QueueRig } from './queue-rig.ts';
import { activeMsPerMessage } from './queue-window.ts';
import { sqsCallKinds } from './sqs-call-kinds.ts';
import { formatMs, verdict } from './statistics.ts';

/** The actions a side called, as `DeleteMessageBatch 30, ReceiveMessage 30`. */
function actions(row: PeerRow): string {
  return Object.entries(row.median.sqsCalls)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([action, count]) => `${action} ${count}`)
    .join(', ');
}

/**
 * The poller against its peers: one line per side (msgs/s, the poller's throughput over the side's, SQS calls per
 * message by kind, database round trips per message, record times, the process's event loop utilization), each
 * side's calls by action, and the target against the peer with the fewest SQS calls per message.
 */
export function renderPollerPeer(
  rows: readonly PeerRow[],
  context: { readonly rig: QueueRig; readonly rounds: number; readonly messages: number },
): string {
  const { rig } = context;
  const [poller, ...peers] = rows;
  if (!poller) return 'Poller vs sqs-consumer: no runs.';
  const head = `${'side'.padEnd(46)} ${'msgs/s'.padStart(7)} ${'poller ×'.padStart(8)}  SQS calls/msg: ${'receive'.padStart(7)} ${'delete'.padStart(6)} ${'visib.'.padStart(6)} ${'other'.padStart(6)} ${'total'.padStart(6)}  ${'DB RT/msg'.padStart(9)} ${'active ms/msg'.padStart(13)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'ELU'.padStart(5)}`;
  const line = (row: PeerRow) => {
    const figures = row.median;
    const calls = sqsCallKinds(figures.sqsCalls, figures.plan.messages);
    const n = (value: number) => value.toFixed(3).padStart(6);
    return `${figures.side.padEnd(46)} ${figures.messagesPerSecond.toFixed(0).padStart(7)} ${`${row.pollerRatio.toFixed(2)}×`.padStart(8)}                 ${n(calls.receive).padStart(7)} ${n(calls.delete)} ${n(calls.visibility)} ${n(calls.other)} ${n(calls.total)}  ${(figures.dbRoundTrips / figures.plan.messages).toFixed(2).padStart(9)} ${formatMs(activeMsPerMessage(figures)).padStart(13)} ${formatMs(figures.p50Ms).padStart(8)} ${formatMs(figures.p99Ms).padStart(8)} ${figures.eventLoopUtilization.toFixed(2).padStart(5)}`;
  };
  const perMessage = (row: PeerRow) => sqsCallKinds(row.median.sqsCalls, row.median.plan.messages).total;
  // The target's peer runs the minimal transaction: the worker-SQL row is a diagnosis, not a peer.
  const minimalPeers = peers.filter((row) => !row.median.side.includes("worker's SQL"));
  const fewest = [...minimalPeers].sort((a, b) => perMessage(a) - perMessage(b))[0];
  const lines = [
    `Poller vs sqs-consumer (per message, ${PEER_CONCURRENCY} records in flight, batches of 10, 30 s lease): SQS (fauxqs, in this process) and ` +
      `PostgreSQL each behind a ${rig.delayMs} ms/direction proxy (a database round trip measured ${formatMs(rig.dbRoundTripMs)}); ` +
      `${context.messages} measured messages per run after a warm-up, median of ${context.rounds} interleaved rounds; ` +
      "calls and round trips counted on the wire; record time = receive to delete; ELU = this process's event loop utilization (the consumer and the emulator).",
    head,
    ...rows.map(line),
    ...rows.map((row) => `  ${row.median.side}: ${actions(row)}`),
  ];
  if (fewest) {
    const ratio = poller.runs.length > 0 ? fewest.pollerRatio : Number.NaN;
    lines.push(
      `  target vs ${fewest.median.side} (the peer with the fewest SQS calls): throughput ≥ 100 %: ${(ratio * 100).toFixed(0)} % ${verdict(ratio >= 1)}; ` +
        `SQS calls/msg no more: ${perMessage(poller).toFixed(3)} vs ${perMessage(fewest).toFixed(3)} ${verdict(perMessage(poller) <= perMessage(fewest) + 1e-9)}`,
    );
  }
  return lines.join('\n');
}
