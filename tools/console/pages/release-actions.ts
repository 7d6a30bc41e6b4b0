import { parseCount } from '../../ops/parse-options.ts';
import { parseQuarantineFilter } from '../../ops/quarantine-filter.ts';
import { quarantineReleaseAll } from '../../ops/quarantine-release-all.ts';
import type { ConsoleContext } from '../console-context.ts';
import { csrfField, dataTable, fieldTable, keyLink, readOnlyNote } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { flagParam, type Params, param, requiredParam } from '../query-params.ts';
import { quietOutput } from '../section.ts';
import { resultWithChecks } from './action-result.ts';

/**
 * The preview of `quarantine release <id>`: the entry (no body) and what its guard says now — released already, a key
 * of another request (hash mismatch), or newer events of its aggregate completed since it was first seen (refused
 * unless forced) — then the form that releases it.
 */
export async function releasePreview(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const id = requiredParam(query, 'id', 'The quarantine id');
  const { session } = ctx;
  const entry = await session.store.quarantineShow(
    { out: quietOutput() },
    { consumer: session.settings.consumer, quarantineId: id },
  );
  const newer = entry.newerCompletedEvents ?? 0;
  const guard = entry.releasedAt
    ? html`<p class="warn" data-guard="released">Released already (${String(entry.releasedAt)}): a second release is refused.</p>`
    : entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH'
      ? html`<p class="warn" data-guard="hash-mismatch">Its key belongs to a different request: a release is refused; fix the producer's key.</p>`
      : newer > 0
        ? html`<p class="warn" data-guard="newer-events">${newer} newer event(s) of ${entry.aggregateType ?? 'its aggregate'} "${entry.aggregateId ?? ''}" completed after it was first seen: a release is refused unless forced, and a forced one applies this older event after them.</p>`
        : html`<p class="ok" data-guard="clear">Dry run: the guard lets it through. A release re-sends it to ${session.settings.queueUrl ?? 'the source queue'}, re-arms its inbox entry and marks the entry released, audited.</p>`;
  const form = !ctx.options.allowActions
    ? readOnlyNote()
    : html`<form method="post" action="/actions/release">${csrfField(ctx)}<input type="hidden" name="id" value="${id}">
${newer > 0 ? html`<label><span><input type="checkbox" name="force" value="true"> release past the guard (--force): I checked that its handler guards by version</span></label>` : ''}
<button type="submit" class="danger">Release ${id}</button></form>`;
  return html`${fieldTable([
    ['quarantine id', id],
    ['idempotency key', keyLink(entry.idempotencyKey)],
    ['message type', entry.messageType],
    ['reason', `${entry.reasonCode}: ${entry.reasonMessage}`],
    ['times quarantined', entry.occurrences],
  ])}${guard}${form}`;
}

/** `quarantine release <id>` from the preview's form: the store's release (guard, re-arm, audit) as the CLI runs it. */
export async function releaseAction(ctx: ConsoleContext, form: Params): Promise<SafeHtml> {
  const { session, options } = ctx;
  const id = requiredParam(form, 'id', 'The quarantine id');
  const released = await session.store.quarantineRelease(
    { sqs: session.sqs(), out: quietOutput(), clock: session.clock },
    {
      quarantineId: id,
      queueUrl: session.require('queueUrl'),
      consumer: session.settings.consumer,
      actor: options.actor,
      force: flagParam(form, 'force'),
    },
  );
  return html`<p class="ok" role="status">Released ${id}: sent as SQS message ${released.releasedMessageId}; inbox ${released.inboxRearmed ? `re-armed (was ${released.inboxStatusBefore})` : 'left as it was'}; audit ${released.auditId}.</p>
${fieldTable([
  ['idempotency key', keyLink(released.idempotencyKey)],
  ['audit id', released.auditId],
  ['forced past newer events', released.forced ? `yes (${released.newerCompletedEvents})` : 'no'],
])}`;
}

/** The filters of a bulk release, from the quarantine page's query or the preview's form. */
function bulkFilter(params: Params) {
  return {
    reason: param(params, 'reason'),
    messageType: param(params, 'messageType'),
    since: param(params, 'since'),
    before: param(params, 'before'),
    limit: param(params, 'limit') ?? '100',
  };
}

async function releaseAll(ctx: ConsoleContext, params: Params, dryRun: boolean) {
  const { session, options } = ctx;
  const filter = bulkFilter(params);
  return resultWithChecks((out) =>
    quarantineReleaseAll(
      { store: session.store, sqs: session.sqs(), out, clock: session.clock },
      {
        consumer: session.settings.consumer,
        queueUrl: session.require('queueUrl'),
        ...parseQuarantineFilter(filter, session.clock.now()),
        limit: parseCount(filter.limit, 'limit', 1, 10_000),
        dryRun,
        yes: true,
        actor: options.actor,
      },
    ),
  );
}

function bulkTable(items: Awaited<ReturnType<typeof releaseAll>>['result']['items']): SafeHtml {
  return dataTable(
    ['id', 'idempotency key', 'message type', 'reason', 'result', 'why', 'audit'],
    items.map((i) => [
      i.quarantineId,
      keyLink(i.idempotencyKey),
      i.messageType,
      i.reasonCode,
      i.result,
      i.skipReason,
      i.auditId,
    ]),
  );
}

/** The dry run of `quarantine release --all` with the quarantine page's filters, then the form that releases them. */
export async function releaseAllPreview(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const { result } = await releaseAll(ctx, query, true);
  const filter = bulkFilter(query);
  const hidden = Object.entries(filter)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  const form = !ctx.options.allowActions
    ? readOnlyNote()
    : result.items.some((i) => i.result === 'would release')
      ? html`<form method="post" action="/actions/release-all">${csrfField(ctx)}${hidden}<button type="submit" class="danger">Release the ${result.items.filter((i) => i.result === 'would release').length} entries the guard lets through</button></form>`
      : '';
  return html`<p class="note">Dry run: ${result.matched} entr${result.matched === 1 ? 'y matches' : 'ies match'} (oldest first, at most ${result.limit}); nothing was sent.</p>${bulkTable(result.items)}${form}`;
}

/** `quarantine release --all --yes` from the preview's form: each entry through the single release's guard and audit. */
export async function releaseAllAction(ctx: ConsoleContext, form: Params): Promise<SafeHtml> {
  const { result, failed } = await releaseAll(ctx, form, false);
  return html`<p class="${failed ? 'warn' : 'ok'}" role="status">Released ${result.released} of ${result.matched}; ${result.skipped} skipped.${failed ? ` ${failed}` : ''}</p>${bulkTable(result.items)}`;
}
