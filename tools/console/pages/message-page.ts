import { readAttemptHistory } from '../../ops/render-attempt-history.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, fieldTable } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { flagParam, type Params, param } from '../query-params.ts';
import { quietOutput, section } from '../section.ts';

type Row = Readonly<Record<string, unknown>>;

/**
 * One message, by idempotency key: its inbox entry (`inbox show`), its attempts (the last 20), its quarantine
 * entries, the operator actions recorded for it (the audit trail), its envelope (from its quarantine entry, the
 * payload hidden unless asked for: it holds the producer's values), a link to its log lines (`logs --key`), and the
 * actions the key allows (cancel; release of a quarantine entry).
 */
export async function messagePage(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const key = param(query, 'key');
  const form = html`<form class="filters" method="get" action="/message">
<label>idempotency key (the envelope's, not the SQS message id)<input name="key" size="60" value="${key ?? ''}"></label>
<button type="submit">Show</button></form>`;
  if (!key) return form;
  const { session } = ctx;
  let shown: Row | undefined;
  const inbox = await section(ctx, 'Inbox entry', async () => {
    shown = (await session.store.inboxShow(
      { out: quietOutput() },
      { consumer: session.settings.consumer, idempotencyKey: key },
    )) as unknown as Row;
    const row = (shown.inbox ?? null) as Row | null;
    if (!row)
      return html`<p class="note">No inbox entry: the worker never claimed this key (it has quarantine entries only).</p>`;
    const { attemptHistory: _history, ...fields } = row;
    return fieldTable(Object.entries(fields));
  });
  const links = html`<section><h2>Actions and logs</h2><p>
<a href="/logs?key=${encodeURIComponent(key)}">Log lines of this key</a> (the saved query "by idempotency key", as <code>sqs-worker logs --key</code>) ·
<a href="/actions/cancel?key=${encodeURIComponent(key)}">Cancel this key…</a></p></section>`;
  if (!shown) return html`${form}${inbox}${links}`;
  const report = shown;
  const row = (report.inbox ?? null) as Row | null;
  const quarantine = (report.quarantine ?? []) as Row[];
  const audit = (report.audit ?? []) as Row[];
  const sections = await Promise.all([
    section(ctx, 'Attempts', () => {
      const attempts = readAttemptHistory(row?.attemptHistory);
      return dataTable(
        ['attempt', 'at', 'outcome', 'code', 'worker version', 'SQS message id', 'receives'],
        attempts.map((a) => [a.attempt, a.at, a.outcome, a.code, a.version, a.messageId, a.receiveCount]),
      );
    }),
    section(ctx, 'Quarantine entries', () =>
      dataTable(
        ['id', 'reason', 'message', 'times', 'first', 'last', 'released', ''],
        quarantine.map((q) => {
          const id = String(q.quarantineId ?? q.bodyHash);
          return [
            id,
            q.reasonCode,
            q.reasonMessage,
            q.occurrences,
            q.firstQuarantinedAt,
            q.lastQuarantinedAt,
            q.releasedAt,
            q.releasedAt ? '' : html`<a href="/actions/release?id=${encodeURIComponent(id)}">release…</a>`,
          ];
        }),
      ),
    ),
    section(ctx, 'Audit trail (operator actions)', () =>
      dataTable(
        ['audit id', 'action', 'outcome', 'actor', 'SQS message id', 'new message id', 'at'],
        audit.map((a) => [
          a.auditId,
          a.action,
          a.outcome,
          a.actor,
          a.sqsMessageId,
          a.newMessageId,
          a.createdAt ?? a.at,
        ]),
      ),
    ),
    section(ctx, 'Envelope', () => envelope(ctx, quarantine, flagParam(query, 'payload'), key)),
  ]);
  return html`${form}${inbox}${sections}${links}`;
}

/** The envelope of the newest quarantine entry (`quarantine show`): its fields, the payload only on request. */
async function envelope(
  ctx: ConsoleContext,
  quarantine: readonly Row[],
  withPayload: boolean,
  key: string,
): Promise<SafeHtml> {
  const newest = quarantine.at(-1);
  if (!newest) {
    return html`<p class="note">The inbox keeps the key and the hash of the request, not its body: an envelope is shown here once a copy is quarantined. A copy in the DLQ is on the <a href="/dlq">DLQ page</a>.</p>`;
  }
  const { session } = ctx;
  const entry = await session.store.quarantineShow(
    { out: quietOutput() },
    { consumer: session.settings.consumer, quarantineId: String(newest.quarantineId ?? newest.bodyHash) },
  );
  const body = (entry as unknown as Row).body;
  let parsed: Row | undefined;
  try {
    parsed = typeof body === 'string' ? (JSON.parse(body) as Row) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object') {
    return html`<p class="warn">The quarantined body is not a JSON envelope (${String(entry.reasonCode)}).</p>`;
  }
  const { payload, ...fields } = parsed;
  const payloadHtml = withPayload
    ? html`<pre><code>${JSON.stringify(payload, null, 2)}</code></pre>`
    : html`<p><a href="/message?key=${encodeURIComponent(key)}&amp;payload=1">Show the payload</a> (it holds the producer's values: redact before sharing).</p>`;
  return html`${fieldTable(Object.entries(fields))}${payloadHtml}`;
}
