import type { ConsoleContext } from './console-context.ts';
import { html, raw, SafeHtml } from './html.ts';

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center;flex-wrap:wrap}
header a{color:#cfe0ff;text-decoration:none}header a.on{color:#fff;font-weight:600;border-bottom:2px solid #7fb0ff}
header .who{margin-left:auto;font-size:12px;color:#b8c0cc}
main{padding:1rem 1.2rem;max-width:1200px}
h1{font-size:20px;margin:.2rem 0 1rem}h2{font-size:16px;margin:1.4rem 0 .5rem}
table{border-collapse:collapse;background:#fff;margin:.3rem 0 1rem;min-width:320px}
th,td{border:1px solid #d9dde3;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:.8rem;flex-wrap:wrap}.card{background:#fff;border:1px solid #d9dde3;padding:.6rem .9rem;min-width:130px}
.card b{display:block;font-size:22px}.card span{font-size:12px;color:#5a6473}
.note{background:#eef4ff;border-left:4px solid #5b8def;padding:.5rem .8rem;margin:.6rem 0}
.warn{background:#fff6e5;border-left:4px solid #e0a030;padding:.5rem .8rem;margin:.6rem 0}
.error{background:#fdecec;border-left:4px solid #d64545;padding:.5rem .8rem;margin:.6rem 0}
.ok{background:#eaf7ee;border-left:4px solid #3a9d5d;padding:.5rem .8rem;margin:.6rem 0}
form.inline{display:inline}form.filters{display:flex;gap:.6rem;flex-wrap:wrap;align-items:end;margin:.4rem 0 1rem}
label{display:flex;flex-direction:column;font-size:12px;color:#5a6473;gap:.15rem}
input,select{font:inherit;padding:.2rem .35rem}button{font:inherit;padding:.3rem .8rem;cursor:pointer}
button.danger{background:#d64545;color:#fff;border:1px solid #b13333}
pre{background:#fff;border:1px solid #d9dde3;padding:.6rem;overflow:auto;max-height:420px}
code{font-family:ui-monospace,monospace;font-size:13px}
`;

/** The console's pages, in the order of its navigation bar. */
export const NAV = [
  ['/', 'Overview'],
  ['/groups', 'Failure groups'],
  ['/quarantine', 'Quarantine'],
  ['/dlq', 'DLQ'],
  ['/message', 'Message'],
] as const;

/**
 * One page of the console: the navigation bar (the current page marked), what it is connected to (store, consumer,
 * queue) and whether actions are allowed, then `body`. No script: every page is rendered here, every action a form.
 */
export function page(ctx: ConsoleContext, title: string, path: string, body: SafeHtml): string {
  const { settings } = ctx.session;
  const mode = ctx.options.allowActions ? 'actions allowed' : 'read-only';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · sqs-worker console</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${raw(STYLE)}</style></head>
<body><header><strong>sqs-worker console</strong>
${NAV.map(([href, label]) => html`<a href="${href}" class="${href === path ? 'on' : ''}">${label}</a>`)}
<span class="who">${settings.store} · consumer ${settings.consumer} · ${mode}</span></header>
<main><h1>${title}</h1>${body}</main></body></html>`.text;
}

/** A failed section or action, told as the CLI tells it (the store's description of its own errors first). */
export function errorBox(ctx: ConsoleContext, error: unknown): SafeHtml {
  const described = ctx.session.store.describeError(error);
  const message = described?.message ?? (error instanceof Error ? error.message : String(error));
  return html`<div class="error" role="alert">${message}</div>`;
}

/** A two-column table of named values. */
export function fieldTable(rows: ReadonlyArray<readonly [string, unknown]>): SafeHtml {
  return html`<table>${rows.map(([name, value]) => html`<tr><th>${name}</th><td>${cell(value)}</td></tr>`)}</table>`;
}

/** A table with a head row; cells are escaped text unless they are markup already. */
export function dataTable(head: readonly string[], rows: ReadonlyArray<readonly unknown[]>): SafeHtml {
  if (rows.length === 0) return html`<p class="note">None.</p>`;
  return html`<table><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows.map(
    (row) =>
      html`<tr>${row.map((value) => (typeof value === 'number' ? html`<td class="n">${value}</td>` : html`<td>${cell(value)}</td>`))}</tr>`,
  )}</tbody></table>`;
}

/** A value as a table shows it: markup as it is, dates as ISO text, objects as JSON, absent as "-". */
export function cell(value: unknown): SafeHtml | string {
  if (value === null || value === undefined || value === '') return '-';
  if (value instanceof SafeHtml) return value;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A link to the message page of an idempotency key. */
export function keyLink(key: string | null | undefined): SafeHtml | string {
  if (!key) return '-';
  return html`<a href="/message?key=${encodeURIComponent(key)}">${key}</a>`;
}

/** The hidden field every form of the console carries. */
export function csrfField(ctx: ConsoleContext): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf}">`;
}

/** What a read-only console shows where an action's form would be. */
export function readOnlyNote(): SafeHtml {
  return html`<p class="note">This console is read-only. Start it with <code>sqs-worker console --allow-actions</code> to release, redrive or cancel from here.</p>`;
}
