import { logsCommand, resolveLogsSource } from '../../ops/logs-command.ts';
import type { ConsoleContext } from '../console-context.ts';
import { dataTable, keyLink } from '../console-layout.ts';
import { html, type SafeHtml } from '../html.ts';
import { type Params, requiredParam } from '../query-params.ts';
import { quietOutput, section } from '../section.ts';

/**
 * The log lines of one idempotency key, oldest first: the stack's saved Logs Insights query "by idempotency key"
 * (`sqs-worker logs --key`), in AWS on the console's `--stage` / `--log-group`, locally on the run's log file.
 */
export async function logsPage(ctx: ConsoleContext, query: Params): Promise<SafeHtml> {
  const key = requiredParam(query, 'key', 'The idempotency key');
  const { session, options } = ctx;
  const body = await section(ctx, `Log lines of ${key}, the last 24 hours`, async () => {
    const result = await logsCommand(
      {
        out: quietOutput(),
        clock: session.clock,
        logs: () => session.cloudWatchLogs(),
        cloudFormation: () => session.cloudFormation(),
      },
      {
        query: 'by-idempotency-key',
        values: { idempotencyKey: key },
        sinceSeconds: 86_400,
        source: resolveLogsSource({
          logFile: options.logFile,
          logGroups: options.logGroups,
          stage: options.stage,
          local: session.settings.sqsEndpoint !== undefined,
        }),
      },
    );
    const head = [...new Set(result.rows.flatMap((row) => Object.keys(row)))];
    return html`<p>From ${result.source}. The query, as saved in the stack:</p><pre><code>${result.queryString}</code></pre>
${dataTable(
  head,
  result.rows.map((row) => head.map((name) => row[name])),
)}`;
  });
  return html`<p>${keyLink(key)}</p>${body}`;
}
