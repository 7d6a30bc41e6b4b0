import { describe, expect, it } from 'vitest';
import { LOG_QUERIES, type LogQueryName, renderLogQuery } from '../../lambda/worker/log-queries.ts';
import { LOGGED_FIELDS } from '../../lambda/worker/record-telemetry.ts';
import {
  evaluateInsightsQuery,
  type InsightsEvent,
} from '../../tools/logs-insights/evaluate-insights-query.ts';
import {
  parseInsightsQuery,
  referencedFields,
  UnsupportedQueryError,
} from '../../tools/logs-insights/parse-insights-query.ts';

const event = (fields: Record<string, unknown>): InsightsEvent => ({
  fields,
  message: JSON.stringify(fields),
});

/** The keys of a record's line: the engine's, its logger's persistent one, Powertools' own, CloudWatch's. */
const KNOWN_FIELDS = new Set<string>([
  ...LOGGED_FIELDS,
  'queue',
  'workerVersion',
  'level',
  'message',
  'timestamp',
  'service',
  '@timestamp',
  '@message',
]);

describe('Function: parseInsightsQuery()', () => {
  it.each([
    [
      'a command outside the subset',
      'fields a | parse @message "x=*" as x',
      'command "parse" is not supported',
    ],
    ['a comparison other than = and like', 'filter processingMs > 10', 'unsupported syntax at 20: "> 10"'],
    [
      'an aggregate outside the subset',
      'stats max(processingMs) as m',
      'expected "count" or "avg" or "pct" or "sum"',
    ],
    ['an aggregate without an alias', 'stats count(*) by messageType', 'expected "as"'],
    ['or between conditions', 'filter a = "1" or b = "2"', 'expected the end of the command'],
    ['a sort of two fields', 'sort a desc, b', 'expected the end of the command'],
    ['an unterminated string', 'filter a = "x', 'unterminated string'],
  ])('refuses %s', (_what, query, message) => {
    // Act
    const parse = () => parseInsightsQuery(query);

    // Assess
    expect(parse).toThrow(UnsupportedQueryError);
    expect(parse).toThrow(message);
  });

  it('parses every runbook query, and each reads only fields the worker logs', () => {
    for (const name of Object.keys(LOG_QUERIES) as LogQueryName[]) {
      // Act
      const fields = referencedFields(parseInsightsQuery(renderLogQuery(name)));

      // Assess
      expect(
        [...fields].filter((field) => !KNOWN_FIELDS.has(field)),
        name,
      ).toEqual([]);
    }
  });
});

describe('Function: evaluateInsightsQuery()', () => {
  const events = [
    event({ timestamp: '2026-07-06T10:00:01.000Z', messageType: 'A', result: 'COMPLETED', processingMs: 10 }),
    event({
      timestamp: '2026-07-06T10:00:02.000Z',
      messageType: 'A',
      result: 'RETRYABLE_FAILURE',
      processingMs: 30,
    }),
    event({
      timestamp: '2026-07-06T10:00:03.000Z',
      messageType: 'B',
      result: 'TERMINAL_FAILURE',
      processingMs: 20,
    }),
    event({ timestamp: '2026-07-06T10:00:04.000Z', message: 'worker_started' }),
  ];

  it('filters, sorts, limits and shows the fields as text (a missing field left out)', () => {
    // Act
    const rows = evaluateInsightsQuery(
      'fields @timestamp, processingMs, failureCode | filter ispresent(processingMs) and result like /FAILURE/ | sort processingMs desc | limit 1',
      events,
    );

    // Assess
    expect(rows).toEqual([{ '@timestamp': '2026-07-06T10:00:02.000Z', processingMs: '30' }]);
  });

  it('groups stats by a field: count, sum(strcontains), pct and avg', () => {
    // Act
    const rows = evaluateInsightsQuery(renderLogQuery('by-message-type'), events);

    // Assess
    expect(rows).toEqual([
      { messageType: 'A', records: '2', failures: '1', p99ProcessingMs: '30', avgProcessingMs: '20' },
      { messageType: 'B', records: '1', failures: '1', p99ProcessingMs: '20', avgProcessingMs: '20' },
    ]);
  });

  it('matches = on a quoted literal exactly, escaped quotes included', () => {
    // Prepare
    const tricky = event({ idempotencyKey: 'say "hi"\\now', result: 'COMPLETED' });

    // Act
    const rows = evaluateInsightsQuery(
      renderLogQuery('by-idempotency-key', { idempotencyKey: 'say "hi"\\now' }),
      [tricky, event({ idempotencyKey: 'say', result: 'COMPLETED' })],
    );

    // Assess
    expect(rows.map((row) => row.idempotencyKey)).toEqual(['say "hi"\\now']);
  });
});

describe('Function: renderLogQuery()', () => {
  it('refuses a parameter the query does not have, a limit out of range and a line break', () => {
    expect(() => renderLogQuery('slowest', { key: 'x' })).toThrow('Query slowest has no parameter "key"');
    expect(() => renderLogQuery('slowest', { limit: 0 })).toThrow(
      'limit must be a whole number from 1 to 10000',
    );
    expect(() => renderLogQuery('by-failure-code', { failureCode: 'A\nB' })).toThrow('line break');
  });
});
