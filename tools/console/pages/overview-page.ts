import { type CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { breakerStatus } from '../../ops/breaker.ts';
import { concurrencyStatus } from '../../ops/concurrency.ts';
import { formatSeconds } from '../../ops/output.ts';
import { queueStatus } from '../../ops/queue-status.ts';
import { type QueueTrendResult, queueTrend } from '../../ops/queue-trend.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, fieldTable, keyLink } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { lineChart } from '../line-chart.ts';
import { quietOutput, section } from '../section.ts';

/** The window of the overview's charts: the last three hours, minute by minute. */
const TREND = { sinceSeconds: 3 * 3600, periodSeconds: 60 } as const;

/**
 * The overview: the queue now (`queue status`: depth, in flight, delayed, DLQ depth, oldest unfinished message, worker
 * version), the inbox's counts (`inbox stats`), the breaker and the adaptive limit (`breaker status`,
 * `concurrency status`, with a mapping), the stack's alarms in ALARM (CloudWatch, AWS), and charts of the last
 * hours (`queue trend`: the inbox's arrivals, completions and failures; CloudWatch's age of the oldest message).
 */
export async function overviewPage(ctx: ConsoleContext): Promise<SafeHtml> {
  const sections = await Promise.all([
    section(ctx, 'Queue now', () => queueNow(ctx)),
    section(ctx, 'Inbox', () => inboxNow(ctx)),
    section(ctx, 'Breaker and adaptive limit', () => breakerNow(ctx)),
    section(ctx, 'Alarms firing', () => alarmsNow(ctx)),
    section(ctx, 'The last 3 hours', () => trendCharts(ctx)),
  ]);
  return html`${sections}`;
}

async function queueNow(ctx: ConsoleContext): Promise<SafeHtml> {
  const { session, options } = ctx;
  const status = await queueStatus(
    {
      sqs: session.sqs(),
      out: quietOutput(),
      clock: session.clock,
      store: session.store,
      cloudWatch: session.cloudWatch(),
      version: session.settings.sqsEndpoint
        ? { kind: 'local', version: options.localVersion }
        : {
            kind: 'lambda',
            lambda: session.lambda(),
            functionName: process.env.WORKER_FUNCTION_NAME || undefined,
            mappingUuid: session.settings.mappingUuid,
          },
    },
    {
      queueUrl: session.require('queueUrl'),
      dlqUrl: session.settings.dlqUrl,
      consumer: session.settings.consumer,
    },
  );
  const card = (label: string, value: string | number, id: string) =>
    html`<div class="card" data-figure="${id}"><b>${value}</b><span>${label}</span></div>`;
  const age = (seconds: number | null) => (seconds === null ? '-' : formatSeconds(seconds));
  return html`<div class="cards">
${card('visible (waiting)', status.source.visible, 'visible')}
${card('in flight', status.source.inFlight, 'in-flight')}
${card('delayed', status.source.delayed, 'delayed')}
${card('in the DLQ', status.dlq ? status.dlq.visible + status.dlq.inFlight : '-', 'dlq')}
${card('oldest queued (CloudWatch)', age(status.oldestMessageAgeSeconds), 'oldest-queued')}
${card('oldest unfinished', age(status.oldestUnfinishedAgeSeconds), 'oldest-unfinished')}
</div>
${fieldTable([
  ['source queue', status.source.queueUrl],
  ['DLQ', status.dlq?.queueUrl ?? 'none given (--dlq-url)'],
  ['oldest unfinished key', keyLink(status.oldestUnfinishedKey)],
  [
    'visibility timeout / maxReceiveCount',
    `${status.source.visibilityTimeoutSeconds} s / ${status.source.maxReceiveCount ?? '-'}`,
  ],
  [
    'worker version',
    status.workerVersion ? `${status.workerVersion.version} (${status.workerVersion.from})` : '-',
  ],
])}
${status.oldestMessageAgeSeconds === null && session.settings.sqsEndpoint ? html`<p class="note">The local emulator publishes no CloudWatch metrics: the age of the oldest queued message is shown in AWS only.</p>` : ''}`;
}

async function inboxNow(ctx: ConsoleContext): Promise<SafeHtml> {
  const { session } = ctx;
  const stats = await session.store.inboxStats(
    { out: quietOutput(), clock: session.clock },
    { consumer: session.settings.consumer },
  );
  return html`${dataTable(Object.keys(stats.byStatus), [Object.values(stats.byStatus)])}${fieldTable([
    ['completed in the last hour', stats.completedLastHour],
    ['open quarantine entries', html`<a href="/quarantine">${stats.openQuarantine}</a>`],
    [
      'oldest FAILED_RETRYABLE',
      stats.oldestRetryable
        ? html`${keyLink(stats.oldestRetryable.idempotencyKey)} (${stats.oldestRetryable.failureCode ?? '-'}, ${stats.oldestRetryable.attempts} attempts, ${formatSeconds(stats.oldestRetryable.ageSeconds)})`
        : '-',
    ],
  ])}`;
}

async function breakerNow(ctx: ConsoleContext): Promise<SafeHtml> {
  const { session } = ctx;
  const mappingUuid = session.settings.mappingUuid;
  if (!mappingUuid) {
    return html`<p class="note">No event source mapping given (<code>--mapping-uuid</code> / <code>WORKER_MAPPING_UUID</code>, the stack output EventSourceMappingUuid): the breaker and the adaptive limit are read from Lambda's control plane, in AWS.</p>`;
  }
  const [breaker, limit] = await Promise.all([
    breakerStatus({ lambda: session.lambda(), out: quietOutput(), clock: session.clock }, { mappingUuid }),
    concurrencyStatus({ lambda: session.lambda(), out: quietOutput() }, { mappingUuid, floor: 2 }),
  ]);
  return fieldTable([
    ['breaker', breaker.breaker],
    ['mapping state', breaker.state],
    ['held by', breaker.hold],
    ['MaximumConcurrency (the adaptive limit)', limit.maxConcurrency],
    ['who moves it', limit.pinned === null ? limit.control : `${limit.control} (${limit.pinned})`],
    ['last change', breaker.lastModified],
  ]);
}

async function alarmsNow(ctx: ConsoleContext): Promise<SafeHtml> {
  const cloudWatch = ctx.session.cloudWatch();
  if (!cloudWatch) {
    return html`<p class="note">The local emulator has no CloudWatch alarms; in AWS this lists the stack's alarms in ALARM (names starting ${ctx.options.alarmPrefix}).</p>`;
  }
  const alarms = await firingAlarms(cloudWatch, ctx.options.alarmPrefix);
  if (alarms.length === 0)
    return html`<p class="ok">No alarm of ${ctx.options.alarmPrefix}* is in ALARM.</p>`;
  return dataTable(
    ['alarm', 'since', 'reason'],
    alarms.map((a) => [a.AlarmName, a.StateUpdatedTimestamp, a.StateReason]),
  );
}

async function firingAlarms(cloudWatch: CloudWatchClient, prefix: string) {
  const alarms = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudWatch.send(
      new DescribeAlarmsCommand({ AlarmNamePrefix: prefix, StateValue: 'ALARM', NextToken }),
    );
    alarms.push(...(page.MetricAlarms ?? []), ...(page.CompositeAlarms ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return alarms;
}

async function trendCharts(ctx: ConsoleContext): Promise<SafeHtml> {
  const { session } = ctx;
  const trend: QueueTrendResult = await queueTrend(
    {
      sqs: session.sqs(),
      out: quietOutput(),
      clock: session.clock,
      store: session.store,
      cloudWatch: session.cloudWatch(),
    },
    {
      queueUrl: session.require('queueUrl'),
      consumer: session.settings.consumer,
      ...TREND,
      worker: { namespace: 'SqsInboxWorker', service: 'sqs-inbox-worker' },
    },
  );
  const labels = trend.periods.map((p) => p.start.toISOString().slice(11, 16));
  const perMinute = (n: number) => n / (TREND.periodSeconds / 60);
  const rates = lineChart({
    title: 'Inbox per minute',
    unit: '/min',
    labels,
    series: [
      { name: 'arrivals', color: '#5b8def', values: trend.periods.map((p) => perMinute(p.inbox.arrivals)) },
      {
        name: 'completions',
        color: '#3a9d5d',
        values: trend.periods.map((p) => perMinute(p.inbox.completions)),
      },
      { name: 'failures', color: '#d64545', values: trend.periods.map((p) => perMinute(p.inbox.failures)) },
    ],
  });
  const hasQueueMetrics = trend.periods.some((p) => p.queue !== null);
  const age = hasQueueMetrics
    ? lineChart({
        title: 'Age of the oldest queued message (CloudWatch)',
        unit: 's',
        labels,
        series: [
          {
            name: 'age',
            color: '#e0a030',
            values: trend.periods.map((p) => p.queue?.oldestAgeSeconds ?? null),
          },
        ],
      })
    : html`<p class="note">Not shown here: ${trend.notShown.join('; ')}.</p>`;
  return html`<p class="note" data-verdict="${trend.verdict.kind}">Verdict: ${trend.verdict.line}</p>${rates}${age}`;
}
