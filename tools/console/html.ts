/** Markup that is safe to place in a page as it is: built by {@link html} from escaped values, or marked by {@link raw}. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What {@link html} accepts between its literals: text (escaped), numbers, markup, lists of these, or nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an HTML element or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * The console's one way to write markup: every interpolated value is escaped unless it is {@link SafeHtml} (markup
 * built by `html` itself), so a value from a queue or a table — a key, a reason message, a body — can never become
 * markup or script.
 *
 * @example
 * ```ts
 * html`<td>${entry.idempotencyKey}</td>`; // "<b>" in a key prints as &lt;b&gt;
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let text = strings[0] ?? '';
  values.forEach((value, i) => {
    text += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(text);
}

/** Markup written by the console itself (a constant stylesheet, a generated SVG), placed as it is. */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text);
}
