import {
  type InsightsAggregate,
  type InsightsCommand,
  type InsightsCondition,
  parseInsightsQuery,
} from './parse-insights-query.ts';

/** A log event as the evaluator reads it: the JSON fields of the line, plus its raw text. */
export interface InsightsEvent {
  readonly fields: Readonly<Record<string, unknown>>;
  /** The raw line (`@message`). */
  readonly message: string;
}

/** A result row, as GetQueryResults gives it: each field's value as text. */
export type InsightsRow = Readonly<Record<string, string>>;

/** Logs Insights returns at most this many rows without a `limit`. */
const DEFAULT_LIMIT = 1000;

type Row = Record<string, unknown>;

/** A field of an event: `@timestamp` is CloudWatch's ingestion time, here the line's own `timestamp`. */
function fieldValue(row: Row, field: string): unknown {
  if (field === '@timestamp' && row['@timestamp'] === undefined) return row.timestamp;
  return row[field];
}

const present = (value: unknown) => value !== undefined && value !== null && value !== '';

function matches(row: Row, condition: InsightsCondition): boolean {
  const value = fieldValue(row, condition.field);
  if (condition.kind === 'ispresent') return present(value);
  if (!present(value)) return false;
  if (condition.kind === 'like') return condition.pattern.test(String(value));
  if (typeof condition.value === 'number') return Number(value) === condition.value;
  return String(value) === condition.value;
}

/** Nearest-rank percentile of the numbers (Logs Insights' `pct` is an approximation of the same). */
function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

function numbers(rows: readonly Row[], field: string): number[] {
  return rows
    .map((row) => fieldValue(row, field))
    .filter(present)
    .map(Number)
    .filter((n) => Number.isFinite(n));
}

function aggregateOf(rows: readonly Row[], aggregate: InsightsAggregate): number | undefined {
  switch (aggregate.fn) {
    case 'count':
      return aggregate.field === undefined
        ? rows.length
        : rows.filter((row) => present(fieldValue(row, aggregate.field as string))).length;
    case 'avg': {
      const values = numbers(rows, aggregate.field);
      return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
    }
    case 'pct':
      return percentile(numbers(rows, aggregate.field), aggregate.percentile);
    case 'sum-strcontains':
      return rows.filter((row) => String(fieldValue(row, aggregate.field) ?? '').includes(aggregate.text))
        .length;
  }
}

function stats(rows: readonly Row[], command: Extract<InsightsCommand, { kind: 'stats' }>): Row[] {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    const key = JSON.stringify(command.by.map((field) => fieldValue(row, field) ?? null));
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  // A stats without `by` over no events still answers one row (count 0), as Logs Insights does.
  if (groups.size === 0 && command.by.length === 0) groups.set('[]', []);
  return [...groups.values()].map((group) => {
    const out: Row = {};
    for (const field of command.by) out[field] = group[0] ? fieldValue(group[0], field) : undefined;
    for (const aggregate of command.aggregates) out[aggregate.alias] = aggregateOf(group, aggregate);
    return out;
  });
}

function compare(a: unknown, b: unknown): number {
  if (!present(a)) return present(b) ? 1 : 0;
  if (!present(b)) return -1;
  const [x, y] = [Number(a), Number(b)];
  if (typeof a === 'number' || typeof b === 'number' || (Number.isFinite(x) && Number.isFinite(y)))
    return x - y;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

/** A value as GetQueryResults shows it: text; numbers with at most 3 decimals. */
function text(value: unknown): string | undefined {
  if (!present(value)) return undefined;
  if (typeof value === 'number') return String(Math.round(value * 1000) / 1000);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Runs a Logs Insights query of the supported subset (`parseInsightsQuery`) over log events, as CloudWatch runs it
 * over a log group: commands in order, `fields` choosing what each row shows (every field before a `stats`
 * stays readable by the commands after it), `stats` grouping, `sort`, `limit` where it stands (1000 rows without one). Rows hold
 * text values, as `GetQueryResults` returns them; a field without a value is left out of its row.
 *
 * @throws UnsupportedQueryError for a query outside the subset (nothing is evaluated then).
 * @example
 * evaluateInsightsQuery('filter ispresent(result) | stats count(*) as n by result', events);
 */
export function evaluateInsightsQuery(query: string, events: readonly InsightsEvent[]): InsightsRow[] {
  const commands = parseInsightsQuery(query);
  let rows: Row[] = events.map((event) => ({ ...event.fields, '@message': event.message }));
  let shown: readonly string[] | undefined;
  let limited = false;
  for (const command of commands) {
    if (command.kind === 'fields') shown = [...(shown ?? []), ...command.fields];
    else if (command.kind === 'filter')
      rows = rows.filter((row) => command.conditions.every((c) => matches(row, c)));
    else if (command.kind === 'stats') {
      rows = stats(rows, command);
      shown = [...command.by, ...command.aggregates.map((a) => a.alias)];
    } else if (command.kind === 'sort') {
      const sign = command.order === 'asc' ? 1 : -1;
      rows = [...rows].sort((a, b) => {
        const order = compare(fieldValue(a, command.field), fieldValue(b, command.field));
        // Rows without the field go last in either order.
        return !present(fieldValue(a, command.field)) || !present(fieldValue(b, command.field))
          ? order
          : sign * order;
      });
    } else {
      rows = rows.slice(0, command.count);
      limited = true;
    }
  }
  return rows.slice(0, limited ? rows.length : DEFAULT_LIMIT).map((row) => {
    const out: Record<string, string> = {};
    for (const field of shown ?? ['@timestamp', '@message']) {
      const value = text(fieldValue(row, field));
      if (value !== undefined) out[field] = value;
    }
    return out;
  });
}
