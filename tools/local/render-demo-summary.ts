import Table from 'cli-table3';
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

/** Renders a {@link DemoSummary} as the text `npm start` prints: outcomes, inbox, quarantine, DLQ, checks. */
export function renderDemoSummary(summary: DemoSummary): string {
  const { esm, poller } = summary;
  const sections = [
    `Run ${summary.runId}: ${summary.sent} messages sent in ${(summary.durationMs / 1000).toFixed(1)} s`,
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
    esm
      ? table(
          ['Event source mapping', 'Count'],
          [
            ['invocations', esm.invocations],
            ['  complete success', esm.succeededInvocations],
            ['  partial failure (batchItemFailures)', esm.partialFailures],
            [
              '  whole batch failed (throw / timeout / invalid)',
              `${esm.errors} / ${esm.timeouts} / ${esm.invalidResponses}`,
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
            ['receives (long polls)', poller.receives],
            ['batches', poller.batches],
            ['messages received (with redeliveries)', poller.messagesReceived],
            ['records acknowledged / reported', `${poller.recordsAcknowledged} / ${poller.recordsReported}`],
            ['deleted', poller.deleted],
            ['deletes dropped (crash after commit)', poller.deletesDropped],
            ['visibility extensions (heartbeat)', poller.heartbeats],
            ['released unstarted', poller.released],
            ['max records in flight', poller.maxInFlight],
          ],
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
