import { dlqCanaryRedrive } from '../../ops/dlq-canary-redrive.ts';
import { dlqRedrive } from '../../ops/dlq-redrive.ts';
import { OperationError } from '../../ops/errors.ts';
import { parseDuration } from '../../ops/parse-duration.ts';
import { parseCount } from '../../ops/parse-options.ts';
import type { ConsoleContext } from '../console-context.ts';
import { csrfField, dataTable, fieldTable, keyLink, readOnlyNote } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { type Params, param, requiredParam } from '../query-params.ts';
import { quietOutput } from '../section.ts';
import { resultWithChecks } from './action-result.ts';

/** The canary's settings from the DLQ page's query or the preview's form (`dlq redrive --canary N --filter …`). */
function canarySettings(params: Params) {
  const messageType = param(params, 'messageType');
  const code = param(params, 'code');
  return {
    canary: parseCount(param(params, 'canary') ?? '1', 'canary', 1, 100),
    roundTimeoutMs: parseDuration(param(params, 'roundTimeout') ?? '60s', 'round timeout') * 1000,
    filter: { ...(messageType ? { messageType } : {}), ...(code ? { code } : {}) },
  };
}

/**
 * The preview of a canary redrive: `dlq redrive --max N --dry-run` with the DLQ page's filters (what would move; the
 * DLQ is read, nothing sent), then the form of `dlq redrive --canary N`: one round, followed in the inbox.
 */
export async function redrivePreview(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const { session } = ctx;
  const settings = canarySettings(query);
  const preview = await dlqRedrive(
    { store: session.store, sqs: session.sqs(), out: quietOutput(), clock: session.clock },
    {
      dlqUrl: session.require('dlqUrl'),
      queueUrl: session.require('queueUrl'),
      consumer: session.settings.consumer,
      max: settings.canary,
      filter: settings.filter,
      dryRun: true,
    },
  );
  const hidden = Object.entries(settings.filter).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  );
  const form = !ctx.options.allowActions
    ? readOnlyNote()
    : html`<form method="post" action="/actions/redrive" class="filters">${csrfField(ctx)}${hidden}
<label>canary messages<input name="canary" size="4" value="${settings.canary}"></label>
<label>wait for their outcomes<input name="roundTimeout" size="5" value="${settings.roundTimeoutMs / 1000}s"></label>
<button type="submit" class="danger">Redrive the canary</button></form>`;
  return html`<p class="note">Dry run: ${preview.moves.length} message(s) would move from the DLQ to the source queue, each key's inbox entry re-armed, each move audited; nothing was sent. The canary then follows each key in the inbox until it completes, fails again or the wait ends.</p>
${dataTable(
  ['SQS message id', 'idempotency key', 'message type', 'code'],
  preview.moves.map((m) => [m.sqsMessageId, keyLink(m.idempotencyKey), m.messageType, m.code]),
)}${form}`;
}

/** `dlq redrive --canary N` (one round) from the preview's form: the audited redrive, then each key's outcome. */
export async function redriveAction(ctx: ConsoleContext, form: Params): Promise<SafeHtml> {
  const { session, options } = ctx;
  const settings = canarySettings(form);
  const { result, failed } = await resultWithChecks((out) =>
    dlqCanaryRedrive(
      { store: session.store, sqs: session.sqs(), out, clock: session.clock },
      {
        dlqUrl: session.require('dlqUrl'),
        queueUrl: session.require('queueUrl'),
        consumer: session.settings.consumer,
        canary: settings.canary,
        filter: settings.filter,
        watch: false,
        roundTimeoutMs: settings.roundTimeoutMs,
        actor: options.actor,
      },
    ),
  );
  const round = result.rounds[0];
  return html`<p class="${failed ? 'warn' : 'ok'}" role="status">Canary: ${result.moved} moved, ${result.succeeded} succeeded, ${result.failed} did not.${failed ? ` ${failed}` : ''}</p>
${dataTable(
  ['idempotency key', 'outcome', 'audit'],
  (round?.outcomes ?? []).map((o) => [
    keyLink(o.idempotencyKey),
    o.outcome,
    round?.moves.find((m) => m.idempotencyKey === o.idempotencyKey)?.auditId,
  ]),
)}`;
}

/**
 * The preview of `inbox cancel <key>`: the key's inbox status now (a COMPLETED key is refused: its effect exists; an
 * unknown key is cancelled ahead of its first copy), then the form with the reason kept in the audit.
 */
export async function cancelPreview(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const key = requiredParam(query, 'key', 'The idempotency key');
  const { session } = ctx;
  let status: string | null = null;
  try {
    const shown = await session.store.inboxShow(
      { out: quietOutput() },
      { consumer: session.settings.consumer, idempotencyKey: key },
    );
    status = ((shown.inbox ?? null) as { status?: string } | null)?.status ?? null;
  } catch (error) {
    if (!(error instanceof OperationError)) throw error;
  }
  const guard =
    status === 'COMPLETED'
      ? html`<p class="warn" data-guard="completed">Dry run: the key is COMPLETED, its effect exists: a cancel is refused. Undo it with a compensating message of your domain.</p>`
      : html`<p class="ok" data-guard="clear">Dry run: ${status ? `the key is ${status}` : 'the key has no inbox entry yet: a marker is created'}. After a cancel, any copy in flight or arriving later is quarantined as CANCELLED and never applied; audited.</p>`;
  const form =
    !ctx.options.allowActions || status === 'COMPLETED'
      ? ctx.options.allowActions
        ? ''
        : readOnlyNote()
      : html`<form method="post" action="/actions/cancel" class="filters">${csrfField(ctx)}<input type="hidden" name="key" value="${key}">
<label>reason (kept in the audit; no payload values)<input name="reason" size="50"></label>
<button type="submit" class="danger">Cancel ${key}</button></form>`;
  return html`${fieldTable([
    ['idempotency key', keyLink(key)],
    ['inbox status', status ?? 'no entry'],
  ])}${guard}${form}`;
}

/** `inbox cancel <key>` from the preview's form. */
export async function cancelAction(ctx: ConsoleContext, form: Params): Promise<SafeHtml> {
  const { session, options } = ctx;
  const key = requiredParam(form, 'key', 'The idempotency key');
  const cancelled = await session.store.inboxCancel(
    { out: quietOutput(), clock: session.clock },
    {
      consumer: session.settings.consumer,
      idempotencyKey: key,
      reason: param(form, 'reason'),
      actor: options.actor,
    },
  );
  return html`<p class="ok" role="status">${cancelled.alreadyCancelled ? `${key} was cancelled already; nothing changed` : `Cancelled ${key} (was ${cancelled.inboxStatusBefore ?? 'unknown to the inbox'})`}; audit ${cancelled.auditId}.</p>
${fieldTable([
  ['idempotency key', keyLink(key)],
  ['audit id', cancelled.auditId],
  ['reason', cancelled.reason],
])}`;
}
