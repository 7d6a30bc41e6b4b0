import { parseCount } from '../../ops/parse-options.ts';
import { parseQuarantineFilter } from '../../ops/quarantine-filter.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, keyLink } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { flagParam, type Params, param } from '../query-params.ts';
import { quietOutput, section } from '../section.ts';

/**
 * The quarantine list (`quarantine list`, no bodies) with its filters — reason code, message type, last quarantined
 * since / before, released entries too, a limit — each entry linking to its message and to its release preview, and
 * the release of every matching entry (`quarantine release --all`) previewed as a dry run first.
 */
export async function quarantinePage(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const filter = {
    reason: param(query, 'reason'),
    messageType: param(query, 'messageType'),
    since: param(query, 'since'),
    before: param(query, 'before'),
  };
  const includeReleased = flagParam(query, 'all');
  const limit = param(query, 'limit') ?? '50';
  const form = html`<form class="filters" method="get" action="/quarantine">
<label>reason code<input name="reason" value="${filter.reason ?? ''}"></label>
<label>message type<input name="messageType" value="${filter.messageType ?? ''}"></label>
<label>since (ISO or 2h)<input name="since" value="${filter.since ?? ''}"></label>
<label>before (ISO or 30m)<input name="before" value="${filter.before ?? ''}"></label>
<label>limit<input name="limit" size="5" value="${limit}"></label>
<label><span><input type="checkbox" name="all" value="true" ${includeReleased ? 'checked' : ''}> released too</span></label>
<button type="submit">Filter</button></form>`;
  const list = await section(ctx, 'Entries', async () => {
    const { session } = ctx;
    const result = await session.store.quarantineList(
      { out: quietOutput() },
      {
        consumer: session.settings.consumer,
        includeReleased,
        ...parseQuarantineFilter(filter, session.clock.now()),
        limit: parseCount(limit, 'limit', 1, 10_000),
      },
    );
    const bulk = new URLSearchParams(
      Object.entries(filter).filter((e): e is [string, string] => e[1] !== undefined),
    ).toString();
    return html`<p>${result.entries.length} entr${result.entries.length === 1 ? 'y' : 'ies'} shown. <a href="/actions/release-all?${bulk}">Release every unreleased entry matching these filters…</a> (a dry run first)</p>
${dataTable(
  [
    'id',
    'idempotency key',
    'message type',
    'reason',
    'times',
    'last quarantined',
    'first-seen version',
    'released',
    '',
  ],
  result.entries.map((e) => [
    e.quarantineId,
    keyLink(e.idempotencyKey),
    e.messageType,
    e.reasonCode,
    e.occurrences,
    e.lastQuarantinedAt,
    e.firstVersion,
    e.releasedAt,
    e.releasedAt
      ? ''
      : html`<a href="/actions/release?id=${encodeURIComponent(e.quarantineId)}">release…</a>`,
  ]),
)}`;
  });
  return html`${form}${list}`;
}
