import { readFile } from 'node:fs/promises';
import type { InsightsEvent } from './evaluate-insights-query.ts';

/**
 * The log events of a file of JSON log lines (what `npm start` writes to `SQS_WORKER_LOG_FILE`: one Powertools line
 * per line), as a log group holds them; a line that is not a JSON object is kept as a message without fields.
 * `since` keeps the events whose `timestamp` is at or after it (Logs Insights' time range), and the lines without one.
 *
 * @throws Error naming the file and the fix when it cannot be read.
 */
export async function readLogEvents(file: string, since?: Date): Promise<InsightsEvent[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(
      `Cannot read the log file ${file}: ${(error as Error).message}. Start the local stack with npm start -- --keep and export the SQS_WORKER_LOG_FILE it prints (or pass --log-file).`,
      { cause: error },
    );
  }
  const events: InsightsEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const fields = parseObject(line);
    if (since && typeof fields.timestamp === 'string' && Date.parse(fields.timestamp) < since.getTime())
      continue;
    events.push({ fields, message: line });
  }
  return events;
}

function parseObject(line: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
