import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import type { CloudWatchReader } from './oldest-message-age.ts';
import type { InboxTrend, InboxTypeTrend, OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit } from './output.ts';
import {
  type QueueMetricPeriod,
  readQueueMetricTrend,
  type WorkerMetricsTarget,
} from './queue-metric-trend.ts';
import { type QueueFacts, readQueueAttributes } from './read-queue-attributes.ts';
import { renderQueueTrend } from './render-queue-trend.ts';
import { type TrendVerdict, trendVerdict } from './trend-verdict.ts';
import { trendWindow } from './trend-window.ts';

/** One period of `queue trend`: the queue's CloudWatch figures (null locally) beside the inbox's. */
export interface QueueTrendPeriod {
  readonly start: Date;
  /** CloudWatch (AWS only); null against a local endpoint. */
  readonly queue: Omit<QueueMetricPeriod, 'start'> | null;
  readonly inbox: {
    readonly arrivals: number;
    readonly completions: number;
    readonly failures: number;
    readonly p50Ms: number | null;
    readonly p99Ms: number | null;
  };
}

/** Result of {@link queueTrend}. */
export interface QueueTrendResult {
  readonly at: string;
  readonly queueUrl: string;
  readonly consumer: string;
  readonly window: { readonly start: Date; readonly end: Date; readonly periodSeconds: number };
  /** The queue now (GetQueueAttributes). */
  readonly now: QueueFacts;
  readonly periods: readonly QueueTrendPeriod[];
  /** What the inbox's p50/p99 measure ({@link InboxTrend.latency}). */
  readonly latency: InboxTrend['latency'];
  readonly byType: readonly InboxTypeTrend[];
  readonly scan?: InboxTrend['scan'];
  /** The figures this run cannot show, each with why (against a local endpoint: the CloudWatch ones). */
  readonly notShown: readonly string[];
  readonly verdict: TrendVerdict;
}

/** Options of {@link queueTrend}. */
export interface QueueTrendOptions {
  readonly queueUrl: string;
  readonly consumer: string;
  readonly sinceSeconds: number;
  readonly periodSeconds: number;
  /** Where the worker's EMF `ProcessingMs` is (AWS). */
  readonly worker: WorkerMetricsTarget;
  /** Print the table per message type too. */
  readonly byType?: boolean;
}

/** What a local run cannot show: every CloudWatch figure, because the emulators publish none. */
const LOCAL_GAPS = [
  'sent, deleted and received per period (CloudWatch AWS/SQS NumberOfMessagesSent/Deleted/Received)',
  'visible messages and the age of the oldest one per period (ApproximateNumberOfMessagesVisible, ApproximateAgeOfOldestMessage)',
  "the worker's processing p50/p99 (EMF ProcessingMs)",
];

/**
 * `queue trend` (runbook "the backlog grows"): per period of the window, the producer side (CloudWatch's sent,
 * deleted, received, visible, oldest age, and the worker's EMF ProcessingMs p50/p99; AWS only) beside the consumer
 * side from the inbox (arrivals, completions, failures, p50/p99; both stores), the queue now, the figures per
 * message type, and a verdict ({@link trendVerdict}): producer spike, consumer slowdown, both, draining or steady.
 * Against a local endpoint (no CloudWatch) the verdict reads the inbox's completions and p99 and the queue now, and
 * the output names what it cannot show and why. Reads only: nothing is received, sent or written.
 */
export async function queueTrend(
  deps: {
    sqs: SqsSender;
    out: OpsOutput;
    clock: Clock;
    store: OpsStore;
    cloudWatch?: CloudWatchReader | undefined;
  },
  options: QueueTrendOptions,
): Promise<QueueTrendResult> {
  const now = deps.clock.now();
  const window = trendWindow(now, options.sinceSeconds, options.periodSeconds);
  const [facts, inbox, metrics] = await Promise.all([
    readQueueAttributes(deps.sqs, options.queueUrl),
    deps.store.inboxTrend({ consumer: options.consumer, window }),
    deps.cloudWatch
      ? readQueueMetricTrend(deps.cloudWatch, { queueUrl: options.queueUrl, window, worker: options.worker })
      : Promise.resolve(null),
  ]);
  const periods: QueueTrendPeriod[] = inbox.periods.map(({ start, ...figures }, i) => {
    const metric = metrics?.[i];
    return { start, queue: metric ? withoutStart(metric) : null, inbox: figures };
  });
  const partial = inbox.scan && !inbox.scan.complete;
  const verdict = trendVerdict({
    periods: periods.map((p) => ({
      sent: p.queue?.sent ?? null,
      consumed: p.queue?.deleted ?? p.inbox.completions,
      p99Ms: p.queue ? p.queue.processingP99Ms : partial ? null : p.inbox.p99Ms,
      visible: p.queue?.visible ?? null,
    })),
    backlogNow: facts.visible,
    consumedName: metrics ? 'deleted' : 'completed',
  });
  const result: QueueTrendResult = {
    at: now.toISOString(),
    queueUrl: options.queueUrl,
    consumer: options.consumer,
    window: { start: window.start, end: window.end, periodSeconds: window.periodSeconds },
    now: facts,
    periods,
    latency: inbox.latency,
    byType: inbox.byType,
    ...(inbox.scan ? { scan: inbox.scan } : {}),
    notShown: metrics ? [] : LOCAL_GAPS,
    verdict,
  };
  emit(deps.out, result, () => renderQueueTrend(result, { byType: options.byType === true }));
  return result;
}

/** A period's CloudWatch figures without its start (the trend's period carries it). */
function withoutStart({ start: _start, ...figures }: QueueMetricPeriod): Omit<QueueMetricPeriod, 'start'> {
  return figures;
}
