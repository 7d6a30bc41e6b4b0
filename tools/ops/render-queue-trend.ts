import { type Cell, formatSeconds, table } from './output.ts';
import type { QueueTrendResult } from './queue-trend.ts';

const LATENCY_NAMES = {
  processing: 'processing',
  'first-seen-to-completed': 'seen→done',
} as const;

const hhmm = (at: Date) => at.toISOString().slice(11, 16);
const msCell = (value: number | null) => (value === null ? '-' : `${value} ms`);

/** The per-period table: CloudWatch's columns (AWS) then the inbox's. */
function periodTable(result: QueueTrendResult): string {
  const latency = LATENCY_NAMES[result.latency];
  const aws = result.periods.some((p) => p.queue !== null);
  const head = [
    'period (UTC)',
    ...(aws ? ['sent', 'deleted', 'received', 'visible max', 'oldest age', 'p50 EMF', 'p99 EMF'] : []),
    'arrivals',
    'completed',
    'failed',
    `p50 ${latency}`,
    `p99 ${latency}`,
  ];
  const rows = result.periods.map((p): Cell[] => [
    hhmm(p.start),
    ...(p.queue
      ? [
          p.queue.sent,
          p.queue.deleted,
          p.queue.received,
          p.queue.visible ?? '-',
          p.queue.oldestAgeSeconds === null ? '-' : formatSeconds(p.queue.oldestAgeSeconds),
          msCell(p.queue.processingP50Ms),
          msCell(p.queue.processingP99Ms),
        ]
      : []),
    p.inbox.arrivals,
    p.inbox.completions,
    p.inbox.failures,
    msCell(p.inbox.p50Ms),
    msCell(p.inbox.p99Ms),
  ]);
  return table(head, rows);
}

/** The per-message-type table of `--by-type`: rate, p99 and failures over the whole window. */
function typeTable(result: QueueTrendResult): string {
  if (result.byType.length === 0) return 'Per message type: no inbox entries in the window.';
  const minutes = (result.window.end.getTime() - result.window.start.getTime()) / 60_000;
  return [
    'Per message type (the whole window, from the inbox):',
    table(
      [
        'messageType',
        'arrivals',
        'completed',
        'completed/min',
        'failed',
        `p99 ${LATENCY_NAMES[result.latency]}`,
      ],
      result.byType.map((t) => [
        t.messageType,
        t.arrivals,
        t.completions,
        Number((t.completions / minutes).toFixed(2)),
        t.failures,
        msCell(t.p99Ms),
      ]),
    ),
  ].join('\n');
}

/**
 * The text of `queue trend`: the window, the table per period, the queue now, what cannot be shown and why, the
 * table per message type (`--by-type`) and the verdict line last.
 *
 * @internal
 */
export function renderQueueTrend(result: QueueTrendResult, options: { byType: boolean }): string {
  const { window, now } = result;
  const lines = [
    `Trend of ${result.queueUrl} (consumer ${result.consumer}), ${window.start.toISOString()} to ${window.end.toISOString()}, ` +
      `periods of ${formatSeconds(window.periodSeconds)} (the period in progress is left out)`,
    periodTable(result),
    `Queue now: ${now.visible} visible, ${now.inFlight} in flight, ${now.delayed} delayed (GetQueueAttributes).`,
  ];
  if (result.latency === 'first-seen-to-completed') {
    lines.push(
      'Inbox p50/p99 (PostgreSQL): first seen → completed, retries included (worker_inbox keeps no start of the completing attempt).',
    );
  }
  if (result.scan?.complete) {
    lines.push(
      `Inbox (DynamoDB): the Scan read ${result.scan.scanned} items of the table (bound ${result.scan.bound}).`,
    );
  }
  if (result.scan && !result.scan.complete) {
    lines.push(
      `Inbox figures are PARTIAL: the scan stopped at its bound of ${result.scan.bound} items (${result.scan.scanned} read) ` +
        'before the end of the table; the verdict does not use their p99. Read the dashboard (EMF metrics) for a table this large.',
    );
  }
  if (result.notShown.length > 0) {
    lines.push(
      'Not shown here (a local SQS endpoint: the emulator publishes no CloudWatch metrics, and EMF lines reach no CloudWatch):',
      ...result.notShown.map((gap) => `  - ${gap}`),
      'The verdict reads the inbox completions and p99 instead of deleted, and the queue now instead of sent.',
    );
  }
  if (options.byType) lines.push(typeTable(result));
  lines.push(`Verdict: ${result.verdict.line}`);
  return lines.join('\n');
}
