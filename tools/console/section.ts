import { createMemoryOutput } from '../ops/memory-output.ts';
import type { OpsOutput } from '../ops/output.ts';
import type { ConsoleContext } from './console-context.ts';
import { errorBox } from './console-layout.ts';
import { html, type SafeHtml } from './html.ts';

/**
 * The output the console hands an ops function: it keeps what the function prints (its JSON document) in memory, so
 * nothing reaches the console's terminal; the page reads the function's returned result.
 */
export function quietOutput(): OpsOutput {
  return createMemoryOutput({ json: true });
}

/**
 * One section of a page, titled: its content, or the error it failed with (so a database that does not answer
 * leaves the queue's figures on the page, with the store's own description of what to check).
 */
export async function section(
  ctx: ConsoleContext,
  title: string,
  render: () => Promise<SafeHtml> | SafeHtml,
): Promise<SafeHtml> {
  try {
    return html`<section><h2>${title}</h2>${await render()}</section>`;
  } catch (error) {
    return html`<section><h2>${title}</h2>${errorBox(ctx, error)}</section>`;
  }
}
