import { dlqPeek } from '../../ops/dlq-peek.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, keyLink } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { quietOutput, section } from '../section.ts';

/** How many DLQ messages the groups page reads (and releases at once): the CLI's `dlq peek --max` at its ceiling. */
const DLQ_PEEK_MAX = 100;

/**
 * Failure groups, the first question of the DLQ runbook ("what failed, since which deploy?"): the open quarantine
 * entries counted by reason code and the worker version that first saw their key (`quarantine list --group`), the
 * DLQ's messages by the same classes and by fingerprint — messageType and failure code (`dlq peek --group`) — and the
 * inbox's unfinished and failed rows by status and code (`inbox stats`). Every sample key links to its message.
 */
export async function groupsPage(ctx: ConsoleContext): Promise<SafeHtml> {
  const { session } = ctx;
  const sections = await Promise.all([
    section(ctx, 'Quarantine, by reason and first-seen version', async () => {
      const listed = await session.store.quarantineList(
        { out: quietOutput() },
        { consumer: session.settings.consumer, limit: 1, group: true },
      );
      return classTable(listed.classes ?? [], (code) => `/quarantine?reason=${encodeURIComponent(code)}`);
    }),
    section(ctx, 'DLQ, by failure and first-seen version', async () => {
      const dlqUrl = session.settings.dlqUrl;
      if (!dlqUrl)
        return html`<p class="note">No DLQ given (<code>--dlq-url</code> / <code>WORKER_DLQ_URL</code>).</p>`;
      const peeked = await dlqPeek(
        { store: session.store, sqs: session.sqs(), out: quietOutput() },
        { dlqUrl, consumer: session.settings.consumer, max: DLQ_PEEK_MAX, group: true },
      );
      return html`<p>${peeked.peeked} message(s) read, left in place.</p>${classTable(peeked.classes, () => '/dlq')}
<h3>By fingerprint</h3>${dataTable(
        ['message type', 'code', 'messages', 'sample keys'],
        peeked.groups.map((g) => [
          g.messageType,
          g.code,
          g.count,
          html`${g.sampleKeys.map((k) => html`${keyLink(k)} `)}`,
        ]),
      )}`;
    }),
    section(ctx, 'Inbox, unfinished and failed', async () => {
      const stats = await session.store.inboxStats(
        { out: quietOutput(), clock: session.clock },
        { consumer: session.settings.consumer },
      );
      return dataTable(
        ['status', 'failure code', 'rows'],
        stats.failures.map((f) => [f.status, f.failureCode, f.count]),
      );
    }),
  ]);
  return html`${sections}`;
}

function classTable(
  classes: ReadonlyArray<{ code: string; firstVersion: string; count: number; sampleKeys: string[] }>,
  codeHref: (code: string) => string,
): SafeHtml {
  return dataTable(
    ['code', 'first seen by version', 'count', 'sample keys'],
    classes.map((c) => [
      html`<a href="${codeHref(c.code)}">${c.code}</a>`,
      c.firstVersion,
      c.count,
      html`${c.sampleKeys.map((k) => html`${keyLink(k)} `)}`,
    ]),
  );
}
