/**
 * The verdict of `queue trend` (runbook "the backlog grows"): is it the producer (a spike of sends) or the consumer
 * (fewer deletes, a slower p99), is the backlog draining, or is nothing changing. A pure function of the per-period
 * figures; the rule is in docs/operations.md "Producer spike or consumer slowdown".
 */

/** The thresholds of {@link trendVerdict} (the rule in docs/operations.md names them). */
export const TREND_THRESHOLDS = {
  /** Sent rose by at least this fraction of the baseline: a producer spike (+50 %). */
  sentRise: 0.5,
  /** Consumed (deleted, or completed locally) fell by at least this fraction of the baseline: the consumer slowed (-25 %). */
  consumedFall: 0.25,
  /** Processing p99 rose by at least this fraction of the baseline (+50 %) … */
  p99Rise: 0.5,
  /** … and by at least this many milliseconds (a p99 of 2 ms becoming 4 ms is noise). */
  p99RiseMinMs: 100,
  /** Sent above consumed (or below) by this fraction in the recent periods: the backlog grows (or drains). */
  flowMargin: 0.1,
  /** Fewer messages than this per period on every side: too little traffic to judge (steady). */
  minMessagesPerPeriod: 5,
} as const;

/** One period's figures, as the verdict reads them. */
export interface TrendFlow {
  /** Messages sent to the queue (CloudWatch NumberOfMessagesSent); null when not known (the local stack). */
  readonly sent: number | null;
  /** Messages the consumer finished: deleted (CloudWatch NumberOfMessagesDeleted) or, locally, inbox completions. */
  readonly consumed: number;
  /** The p99 processing time of the period in milliseconds; null without completions or figures. */
  readonly p99Ms: number | null;
  /** Visible messages, the period's maximum (CloudWatch); null when not known. */
  readonly visible: number | null;
}

/** What {@link trendVerdict} judges. */
export interface TrendVerdictInput {
  /** The periods, oldest first; the last quarter of them (at least one) is "recent", the others the baseline. */
  readonly periods: readonly TrendFlow[];
  /** The queue's visible messages now (GetQueueAttributes); null when not read. */
  readonly backlogNow: number | null;
  /** What `consumed` is, named in the line: `deleted` (CloudWatch) or `completed` (the inbox). */
  readonly consumedName: 'deleted' | 'completed';
}

/** The kinds of verdict, each with what to do in docs/operations.md. */
export type TrendVerdictKind =
  | 'producer-spike'
  | 'consumer-slowdown'
  | 'spike-and-slowdown'
  | 'draining'
  | 'steady';

/** Mean figures of one side of the comparison. */
export interface TrendSide {
  /** Sent per period (null when not known). */
  readonly sent: number | null;
  /** Consumed per period. */
  readonly consumed: number;
  /** The baseline's median p99, or the recent periods' highest (null without any). */
  readonly p99Ms: number | null;
}

/** The verdict: its kind, the line to print and the figures it compared. */
export interface TrendVerdict {
  readonly kind: TrendVerdictKind;
  /** One line an on-call engineer can act on: what changed, by how much, and what to do. */
  readonly line: string;
  readonly baseline: TrendSide;
  readonly recent: TrendSide;
}

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;

const middle = (values: readonly number[]) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
};

/** Relative change from `base` to `recent`: +0.5 is +50 %; from nothing to something is +Infinity. */
const change = (base: number, recent: number) =>
  base > 0 ? (recent - base) / base : recent > 0 ? Number.POSITIVE_INFINITY : 0;

const percent = (value: number) =>
  Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${Math.round(value * 100)}%` : 'from none';

const rate = (value: number) => `${Number(value.toFixed(1))}/period`;

function side(periods: readonly TrendFlow[], p99: (values: number[]) => number | null): TrendSide {
  const sent = periods.map((p) => p.sent);
  return {
    sent: sent.some((value) => value === null) ? null : mean(sent as number[]),
    consumed: mean(periods.map((p) => p.consumed)),
    p99Ms: p99(periods.flatMap((p) => (p.p99Ms === null ? [] : [p.p99Ms]))),
  };
}

/** What changed between the baseline and the recent periods, against {@link TREND_THRESHOLDS}. */
function compare(baseline: TrendSide, recent: TrendSide) {
  const t = TREND_THRESHOLDS;
  const sentChange =
    baseline.sent === null || recent.sent === null ? null : change(baseline.sent, recent.sent);
  const consumedChange = change(baseline.consumed, recent.consumed);
  const p99Change =
    baseline.p99Ms === null || recent.p99Ms === null ? null : change(baseline.p99Ms, recent.p99Ms);
  const p99Rose =
    p99Change !== null &&
    p99Change >= t.p99Rise &&
    (recent.p99Ms as number) - (baseline.p99Ms as number) >= t.p99RiseMinMs;
  const flow = recent.sent === null ? null : recent.sent - recent.consumed;
  return {
    sentChange,
    consumedChange,
    p99Change,
    sentRose: sentChange !== null && sentChange >= t.sentRise,
    consumedFell: consumedChange <= -t.consumedFall,
    p99Rose,
    growing: flow !== null && recent.sent !== null && recent.sent > recent.consumed * (1 + t.flowMargin),
    shrinking: flow !== null && recent.sent !== null && recent.consumed > recent.sent * (1 + t.flowMargin),
  };
}

/**
 * Judges a backlog's trend: the recent periods (the last quarter, at least one) against the baseline (the others).
 * In order:
 *
 * 1. sent unknown (local), nothing consumed recently and messages visible now → `consumer-slowdown`;
 *    too little traffic on every side (under `minMessagesPerPeriod`) → `steady`;
 * 2. sent known and consumed above sent by `flowMargin` → `draining`;
 * 3. sent rose by `sentRise` while consumed fell by `consumedFall` or p99 rose → `spike-and-slowdown`;
 * 4. sent rose by `sentRise` and sent exceeds consumed by `flowMargin` → `producer-spike` (deleted held);
 * 5. consumed fell by `consumedFall` while sent held (or, sent unknown, the queue still holds messages), or p99 rose by
 *    `p99Rise` and `p99RiseMinMs` while sent held, or sent exceeds consumed while sent held (the consumer cannot
 *    keep up) → `consumer-slowdown`;
 * 6. otherwise `steady`.
 *
 * @example
 * ```ts
 * trendVerdict({ periods, backlogNow: 1200, consumedName: 'deleted' }).line;
 * // 'producer spike: sent rose +150% (40/period → 100/period) while deleted held (+3%) …'
 * ```
 */
export function trendVerdict(input: TrendVerdictInput): TrendVerdict {
  const { periods, consumedName } = input;
  const recentCount = Math.max(1, Math.floor(periods.length / 4));
  const baseline = side(periods.slice(0, periods.length - recentCount), middle);
  const recent = side(periods.slice(periods.length - recentCount), (values) =>
    values.length === 0 ? null : Math.max(...values),
  );
  const c = compare(baseline, recent);
  const verdict = (kind: TrendVerdictKind, line: string): TrendVerdict => ({
    kind,
    line,
    baseline,
    recent,
  });
  const sentKnown = recent.sent !== null && baseline.sent !== null;
  const sentText = sentKnown
    ? `sent ${percent(c.sentChange as number)} (${rate(baseline.sent as number)} → ${rate(recent.sent as number)})`
    : 'sent is not known here (no CloudWatch)';
  const consumedText = `${consumedName} ${percent(c.consumedChange)} (${rate(baseline.consumed)} → ${rate(recent.consumed)})`;
  const p99Text =
    c.p99Change === null
      ? 'p99 not known'
      : `p99 ${percent(c.p99Change)} (${baseline.p99Ms} ms → ${recent.p99Ms} ms)`;
  const backlog = input.backlogNow ?? periods.at(-1)?.visible ?? null;
  const backlogText = backlog === null ? '' : `; ${backlog} visible now`;
  const volume = Math.max(baseline.sent ?? 0, recent.sent ?? 0, baseline.consumed, recent.consumed);

  if (!sentKnown && recent.consumed === 0 && backlog !== null && backlog > 0) {
    return verdict(
      'consumer-slowdown',
      `consumer slowdown: nothing ${consumedName} in the recent periods while ${backlog} message(s) are visible (${sentText}). Is the worker running? Check the store (sqs-worker health), the breaker and the worker's logs.`,
    );
  }
  if (volume < TREND_THRESHOLDS.minMessagesPerPeriod) {
    return verdict(
      'steady',
      `steady: too little traffic to judge (under ${TREND_THRESHOLDS.minMessagesPerPeriod} messages per period)${backlogText}.`,
    );
  }
  if (c.shrinking && backlog !== 0) {
    const net = recent.consumed - (recent.sent as number);
    const eta = backlog !== null && net > 0 ? `, about ${Math.ceil(backlog / net)} period(s) to empty` : '';
    return verdict(
      'draining',
      `draining: ${consumedName} ${rate(recent.consumed)} above sent ${rate(recent.sent as number)}${backlogText}${eta}. Nothing to do; watch it reach zero.`,
    );
  }
  const slower = c.consumedFell || c.p99Rose;
  const slowerText = [
    c.consumedFell ? `${consumedName} fell ${Math.round(-c.consumedChange * 100)}%` : '',
    c.p99Rose ? p99Text : '',
  ]
    .filter(Boolean)
    .join(' / ');
  if (c.sentRose && slower) {
    return verdict(
      'spike-and-slowdown',
      `producer spike and consumer slowdown: ${sentText} while ${slowerText}${backlogText}. Treat the consumer first (health, breaker, failures by type), then ask the producer to slow down.`,
    );
  }
  if (c.sentRose && c.growing) {
    return verdict(
      'producer-spike',
      `producer spike: ${sentText} while ${consumedName} held (${percent(c.consumedChange)}, ${rate(recent.consumed)})${backlogText}. The worker is healthy: raise its concurrency if the store has room (sqs-worker capacity), or ask the producer to slow down.`,
    );
  }
  const localBacklog = !sentKnown && backlog !== null && backlog > 0;
  if (
    (c.consumedFell && (sentKnown ? c.growing : localBacklog)) ||
    (c.p99Rose && !c.sentRose) ||
    (!c.sentRose && c.growing)
  ) {
    const why = slower
      ? slowerText
      : `${consumedName} stays below sent (${rate(recent.consumed)} < ${rate(recent.sent as number)})`;
    return verdict(
      'consumer-slowdown',
      `consumer slowdown: ${why} while ${sentKnown ? `sent held (${percent(c.sentChange as number)})` : sentText}${backlogText}. Check the store (sqs-worker health), the breaker and concurrency, failures by type (queue trend --by-type) and the worker's logs.`,
    );
  }
  const quieter =
    !sentKnown && c.consumedFell && backlog === 0 ? ' (a fall with the queue empty is less traffic)' : '';
  return verdict(
    'steady',
    `steady: ${sentText}, ${consumedText}, ${p99Text}${backlogText}; no change beyond the thresholds${quieter}.`,
  );
}
