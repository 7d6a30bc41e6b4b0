import type { DynamoCallsBench, DynamoSideResult } from './dynamodb-calls.ts';
import { formatMs, verdict } from './statistics.ts';

const calls = (perMessage: Readonly<Record<string, number>>) =>
  Object.entries(perMessage)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([operation, count]) => `${operation} ${count.toFixed(2)}`)
    .join(' + ') || 'none';

const total = (perMessage: Readonly<Record<string, number>>) =>
  Object.values(perMessage).reduce((sum, count) => sum + count, 0);

/**
 * What the store writes beyond the minimal, and why it is kept: named in the bench's output and in
 * docs/performance.md. None of it adds a call or a unit on a message's first delivery.
 */
export const DYNAMO_STORE_EXTRAS: readonly string[] = [
  'a duplicate (a copy of a COMPLETED key) costs one UpdateItem more (1 write unit): the copy counted on its inbox item ' +
    '(redeliveryCount or resendCount, lastMessageId), which `inbox stats` and the duplicate metrics read; a failed conditional put cannot also write, so it is a call of its own, paid by duplicates only',
  'the same two calls carry more attributes than the minimal writes (the lease expiry, attempts, attempt history, ' +
    'first version, aggregate, correlation and trace ids, timestamps), which the lease takeover, the attempt policy and the ops ' +
    'commands need: bytes, not calls; a unit more only once an item passes 1 KiB (an attempt history entry is ~140 B: a key ' +
    'retried two or three more times crosses it, on retried keys only)',
];

function row(result: DynamoSideResult): string {
  return (
    `  ${result.side.padEnd(8)} ${calls(result.callsPerMessage)} = ${total(result.callsPerMessage).toFixed(2)} calls/msg, ` +
    `${result.roundTripsPerMessage.toFixed(2)} HTTP round trips/msg; write units/msg ${result.serviceWriteUnitsPerMessage.toFixed(2)} ` +
    `as the service bills them (DynamoDB Local reports ${result.writeUnitsPerMessage.toFixed(2)}), read units ` +
    `${result.readUnitsPerMessage.toFixed(2)}; largest item ${result.largestItemBytes} B; ${result.messagesPerSecond.toFixed(0)} msgs/s, ` +
    `p50 ${formatMs(result.p50Ms)}, p99 ${formatMs(result.p99Ms)}\n` +
    `           a duplicate (resend of a completed key): ${calls(result.duplicate.callsPerMessage)}, ` +
    `${result.duplicate.serviceWriteUnitsPerMessage.toFixed(2)} write units`
  );
}

/** The DynamoDB line of the bench: calls, units and times per message of the store and of the minimal. */
export function renderDynamoCalls(bench: DynamoCallsBench): string {
  return [
    `DynamoDB calls per message: the worker on the DynamoDB store (createWorker + createDynamoStore, example handlers, ` +
      `batches of 10, one record at a time) vs the hand-written minimal (tools/bench/dynamo-minimal-baseline.ts: ` +
      `conditional PutItem claim, the handler's reads (none for this handler), one TransactWriteItems of the case ` +
      `update, the deadline put and the inbox completion); CaseDeadlineCalculationRequested of existing cases, ` +
      `DynamoDB Local behind the round-trip proxy, ${bench.delayMs} ms per direction (a GetItem through it took ` +
      `${formatMs(bench.roundTripMs)}, DynamoDB Local's own time included); ${bench.messages} messages per side and ` +
      `round, ${bench.rounds} interleaved rounds (msgs/s: median of the rounds); every call counted by a middleware ` +
      `on each side's client, which also sets ReturnConsumedCapacity: 'TOTAL' on every command:`,
    row(bench.minimal),
    row(bench.store),
    '  what the store writes beyond the minimal, and why:',
    ...DYNAMO_STORE_EXTRAS.map((line) => `   - ${line}`),
  ].join('\n');
}

/** The DynamoDB line's target: no extra call and no extra write unit per message over the minimal. */
export function renderDynamoTargets(bench: DynamoCallsBench): string {
  const store = total(bench.store.callsPerMessage);
  const minimal = total(bench.minimal.callsPerMessage);
  const met =
    store <= minimal && bench.store.serviceWriteUnitsPerMessage <= bench.minimal.serviceWriteUnitsPerMessage;
  return (
    `DynamoDB store: no extra call and no extra write unit per message over the minimal — ${store.toFixed(2)} calls, ` +
    `${bench.store.serviceWriteUnitsPerMessage.toFixed(2)} write units vs ${minimal.toFixed(2)}, ` +
    `${bench.minimal.serviceWriteUnitsPerMessage.toFixed(2)}: ${verdict(met)}; msgs/s ${((bench.store.messagesPerSecond / bench.minimal.messagesPerSecond) * 100).toFixed(1)} % of the minimal's`
  );
}
