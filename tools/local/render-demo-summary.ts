import Table from 'cli-table3';
import { formatMiB } from './big-payload-case.ts';
import type { DemoSummary } from './demo-scenario.ts';

const table = (head: string[], rows: (string | number)[][], colWidths?: number[]) => {
  const t = new Table({
    head,
    style: { head: [], border: [], compact: true },
    ...(colWidths ? { colWidths, wordWrap: true } : {}),
  });
  t.push(...rows.map((row) => row.map(String)));
  return t.toString();
};

const median = (values: readonly number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};

/**
 * The memory and time each component ran within, what it peaked at, and what was killed: the function's memory size
 * and timeout with the peak of its invocations, or the poller task's memory with its tasks' peak; the big payload.
 */
export function limitsTable(summary: Pick<DemoSummary, 'function' | 'poller' | 'bigPayload'>): string {
  const rows: (string | number)[][] = [];
  const fn = summary.function;
  if (fn) {
    const perInvocation = fn.stats.memoryPerInvocationMb;
    rows.push(
      ['worker function: memory size / timeout', `${fn.memorySizeMb} MB / ${fn.timeoutMs / 1000} s`],
      ['  execution environments started (cold starts)', fn.stats.coldStarts],
      [
        '  peak memory per invocation (max / median)',
        perInvocation.length ? `${fn.stats.peakMemoryMb} / ${median(perInvocation)} MB` : '-',
      ],
      ['  killed for memory (Runtime.OutOfMemory)', fn.stats.outOfMemory],
      ['  killed at the timeout (environment reset)', fn.stats.timeouts],
    );
  }
  const poller = summary.poller;
  if (poller) {
    rows.push(
      ['poller task: memory', `${poller.memoryMiB} MiB`],
      ['  peak memory of a task', `${poller.stats.peakMemoryMiB} MiB`],
      ['  tasks killed for memory (OutOfMemoryError, exit 137)', poller.stats.outOfMemory],
      ['  tasks that crashed', poller.stats.crashes],
    );
  }
  const big = summary.bigPayload;
  if (big) {
    const limit = `stack's limit ${formatMiB(big.stackLimitBytes)}${big.unsafe ? `; ${big.unsafe}` : ''}`;
    rows.push([
      `payloadRef of ${formatMiB(big.bytes)} (${limit})`,
      `${big.fate}; peak ${big.peakMb ?? '?'} of ${big.memoryMb} MB; ${big.outOfMemoryKills} killed for memory`,
    ]);
  }
  return rows.length ? table(['Memory and time (as AWS enforces them)', 'Figures'], rows) : '';
}

/** Renders a {@link DemoSummary} as the text `npm start` prints: outcomes, inbox, quarantine, DLQ, checks. */
export function renderDemoSummary(summary: DemoSummary): string {
  const sections = [
    `Run ${summary.runId}: ${summary.sent} messages sent in ${(summary.durationMs / 1000).toFixed(1)} s`,
    ...countTables(summary),
    ...effectTables(summary),
    ...consumerTables(summary),
    limitsTable(summary),
    summary.kills?.length
      ? ['Killed for memory or time, as AWS reports it:', ...summary.kills.map((line) => `  ${line}`)].join(
          '\n',
        )
      : '',
    table(
      ['Check', 'Result', 'Figures'],
      summary.checks.map((check) => [check.name, check.ok ? 'PASS' : 'FAIL', check.detail]),
      [44, 8, 54],
    ),
  ];
  return `${sections.filter(Boolean).join('\n')}\n`;
}

/** What was sent and what became of it: scenario cases, outcomes, inbox, quarantine and DLQ. */
function countTables(summary: DemoSummary): string[] {
  return [
    table(
      ['Scenario case', 'Sent'],
      Object.entries(summary.scenario).map(([kind, count]) => [kind, count]),
    ),
    table(
      ['Worker outcome (per delivery)', 'Count'],
      Object.entries(summary.outcomes).map(([result, count]) => [result, count ?? 0]),
    ),
    table(
      ['Inbox status', 'Rows'],
      Object.entries(summary.inbox).map(([status, count]) => [status, count]),
    ),
    table(
      ['Quarantine reason', 'Rows'],
      Object.entries(summary.quarantine).map(([reason, count]) => [reason, count]),
    ),
    table(
      ['DLQ', 'Messages'],
      [
        ['idempotency keys', summary.dlq.join(', ') || '-'],
        ['total', summary.dlq.length],
      ],
    ),
  ];
}

/** The domain's rows, the payloads by reference and the producer side's outbox. */
function effectTables(summary: DemoSummary): string[] {
  return [
    table(
      ['Effects', 'Rows'],
      [
        ['ledger_entries', summary.effects.ledgerEntries],
        ['cases advanced past version 1', summary.effects.casesAdvanced],
        ['case_deadlines', summary.effects.deadlines],
        ['documents (from referenced documents)', summary.effects.documents],
      ],
    ),
    table(
      ['Payloads by reference (S3)', 'Count'],
      [
        ['messages sent with a payloadRef or offloaded', summary.payloads.referenced],
        ['outbox events offloaded to S3 (over 1 MiB)', summary.payloads.offloadedByOutbox],
        ...Object.entries(summary.payloads.quarantined).map(([code, count]) => [
          `quarantined ${code}`,
          count,
        ]),
      ],
    ),
    table(
      ['Outbox (producer side)', 'Count'],
      [
        ['events enqueued in producer transactions', summary.outbox.enqueued],
        ['published by the relay loop', summary.outbox.published],
        ['relay runs', summary.outbox.relayRuns],
      ],
    ),
  ];
}

/** The counters of what consumed the queue: the event source mapping's, the poller's ('' for the other). */
function consumerTables({ esm, poller }: DemoSummary): string[] {
  return [
    esm
      ? table(
          ['Event source mapping', 'Count'],
          [
            ['invocations', esm.invocations],
            ['  complete success', esm.succeededInvocations],
            ['  partial failure (batchItemFailures)', esm.partialFailures],
            [
              '  whole batch failed (throw / timeout / out of memory / invalid)',
              `${esm.errors} / ${esm.timeouts} / ${esm.outOfMemory} / ${esm.invalidResponses}`,
            ],
            ['messages received (with redeliveries)', esm.messagesReceived],
            ['deleted', esm.deleted],
            ['deletes dropped (crash after commit)', esm.deletesDropped],
            ['max concurrent invocations', esm.maxObservedConcurrency],
          ],
        )
      : '',
    poller
      ? table(
          ['Poller', 'Count'],
          [
            ['tasks started (a stopped task is replaced)', poller.stats.tasksStarted],
            ['messages received (with redeliveries)', poller.stats.received],
            ['deleted', poller.stats.deleted],
            ['deletes dropped (crash after commit)', poller.stats.deletesDropped],
            ['released unstarted', poller.stats.released],
          ],
        )
      : '',
  ];
}
