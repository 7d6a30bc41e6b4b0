import { dlqPeek } from '../../ops/dlq-peek.ts';
import { parseCount } from '../../ops/parse-options.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, keyLink } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { type Params, param } from '../query-params.ts';
import { quietOutput, section } from '../section.ts';

/**
 * The DLQ's messages (`dlq peek`: read and left in place, joined with the inbox), filtered by message type and failure
 * code as `dlq redrive --filter` filters, with the canary redrive of the matching ones previewed first.
 */
export async function dlqPage(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const messageType = param(query, 'messageType');
  const code = param(query, 'code');
  const max = param(query, 'max') ?? '50';
  const form = html`<form class="filters" method="get" action="/dlq">
<label>message type<input name="messageType" value="${messageType ?? ''}"></label>
<label>failure code<input name="code" value="${code ?? ''}"></label>
<label>read at most<input name="max" size="5" value="${max}"></label>
<button type="submit">Filter</button></form>`;
  const list = await section(ctx, 'Messages', async () => {
    const { session } = ctx;
    const peeked = await dlqPeek(
      { store: session.store, sqs: session.sqs(), out: quietOutput() },
      {
        dlqUrl: session.require('dlqUrl'),
        consumer: session.settings.consumer,
        max: parseCount(max, 'max', 1, 1000),
      },
    );
    const shown = peeked.messages.filter(
      (m) => (!messageType || m.messageType === messageType) && (!code || m.code === code),
    );
    const filters = new URLSearchParams(
      Object.entries({ messageType, code }).filter((e): e is [string, string] => e[1] !== undefined),
    ).toString();
    return html`<p>${peeked.peeked} message(s) read and left in place; ${shown.length} match. <a href="/actions/redrive?${filters}">Canary redrive of the matching messages…</a> (a dry run first)</p>
${dataTable(
  ['SQS message id', 'idempotency key', 'message type', 'code', 'receives', 'inbox', 'attempts', 'sent at'],
  shown.map((m) => [
    m.sqsMessageId,
    keyLink(m.idempotencyKey),
    m.messageType,
    m.code,
    m.receiveCount,
    m.inboxStatus,
    m.inboxAttempts,
    m.sentAt,
  ]),
)}`;
  });
  return html`${form}${list}`;
}
