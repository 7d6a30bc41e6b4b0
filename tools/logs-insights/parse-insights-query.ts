/**
 * The subset of the CloudWatch Logs Insights query language the runbook queries use (lambda/worker/log-queries.ts),
 * parsed into commands. Anything outside it is refused ({@link UnsupportedQueryError}), so that a query the
 * evaluator cannot run exactly is never run approximately:
 *
 * - `fields a, b, @timestamp`
 * - `filter <condition> [and <condition> …]`, a condition being `field = "text"` or `field = 12`,
 *   `field like /regex/` or `field like "text"`, or `ispresent(field)`
 * - `stats <aggregate> as <alias>, … [by field, …]`, an aggregate being `count(*)`, `count(field)`,
 *   `avg(field)`, `pct(field, 99)` or `sum(strcontains(field, "text"))`
 * - `sort field asc|desc`
 * - `limit n`
 */

/** A query the evaluator does not implement. */
export class UnsupportedQueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedQueryError';
  }
}

/** One condition of a `filter`. */
export type InsightsCondition =
  | { readonly kind: 'equals'; readonly field: string; readonly value: string | number }
  | { readonly kind: 'like'; readonly field: string; readonly pattern: RegExp }
  | { readonly kind: 'ispresent'; readonly field: string };

/** One aggregate of a `stats`, with its alias. */
export type InsightsAggregate = { readonly alias: string } & (
  | { readonly fn: 'count'; readonly field: string | undefined }
  | { readonly fn: 'avg'; readonly field: string }
  | { readonly fn: 'pct'; readonly field: string; readonly percentile: number }
  | { readonly fn: 'sum-strcontains'; readonly field: string; readonly text: string }
);

/** One command of the pipeline. */
export type InsightsCommand =
  | { readonly kind: 'fields'; readonly fields: readonly string[] }
  | { readonly kind: 'filter'; readonly conditions: readonly InsightsCondition[] }
  | {
      readonly kind: 'stats';
      readonly aggregates: readonly InsightsAggregate[];
      readonly by: readonly string[];
    }
  | { readonly kind: 'sort'; readonly field: string; readonly order: 'asc' | 'desc' }
  | { readonly kind: 'limit'; readonly count: number };

type Token =
  | { readonly type: 'word'; readonly text: string }
  | { readonly type: 'string'; readonly text: string }
  | { readonly type: 'number'; readonly value: number }
  | { readonly type: 'regex'; readonly pattern: RegExp }
  | { readonly type: 'punct'; readonly text: string };

/** Splits a query into tokens; `|` is a token of its own. */
function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < query.length) {
    const char = query[at] as string;
    if (/\s/.test(char)) {
      at += 1;
    } else if (char === '"' || char === "'") {
      let text = '';
      let end = at + 1;
      while (end < query.length && query[end] !== char) {
        if (query[end] === '\\' && end + 1 < query.length) end += 1;
        text += query[end];
        end += 1;
      }
      if (end >= query.length)
        throw new UnsupportedQueryError(`unterminated string at ${at}: ${query.slice(at)}`);
      tokens.push({ type: 'string', text });
      at = end + 1;
    } else if (char === '/') {
      const match = /^\/((?:\\.|[^/\\])+)\/(i?)/.exec(query.slice(at));
      if (!match) throw new UnsupportedQueryError(`unterminated regular expression at ${at}`);
      tokens.push({ type: 'regex', pattern: new RegExp(match[1] as string, match[2]) });
      at += match[0].length;
    } else {
      const word = /^(@?[A-Za-z_][\w.]*|\d+(?:\.\d+)?|[|(),=*])/.exec(query.slice(at));
      if (!word)
        throw new UnsupportedQueryError(`unsupported syntax at ${at}: "${query.slice(at, at + 20)}"`);
      const text = word[0];
      if (/^\d/.test(text)) tokens.push({ type: 'number', value: Number(text) });
      else if (/^[|(),=*]$/.test(text)) tokens.push({ type: 'punct', text });
      else tokens.push({ type: 'word', text });
      at += text.length;
    }
  }
  return tokens;
}

/** A cursor over one command's tokens. */
class Cursor {
  private at = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly command: string,
  ) {}
  done(): boolean {
    return this.at >= this.tokens.length;
  }
  peek(): Token | undefined {
    return this.tokens[this.at];
  }
  private fail(expected: string): never {
    const token = this.peek();
    const seen = token ? describe(token) : 'the end of the command';
    throw new UnsupportedQueryError(`${this.command}: expected ${expected}, found ${seen}`);
  }
  word(expected = 'a field name'): string {
    const token = this.peek();
    if (token?.type !== 'word') this.fail(expected);
    this.at += 1;
    return token.text;
  }
  keyword(...allowed: string[]): string {
    const token = this.peek();
    const text = token?.type === 'word' ? token.text.toLowerCase() : undefined;
    if (text === undefined || !allowed.includes(text)) this.fail(allowed.map((k) => `"${k}"`).join(' or '));
    this.at += 1;
    return text;
  }
  isWord(text: string): boolean {
    const token = this.peek();
    return token?.type === 'word' && token.text.toLowerCase() === text;
  }
  punct(text: string): void {
    const token = this.peek();
    if (token?.type !== 'punct' || token.text !== text) this.fail(`"${text}"`);
    this.at += 1;
  }
  isPunct(text: string): boolean {
    const token = this.peek();
    return token?.type === 'punct' && token.text === text;
  }
  string(): string {
    const token = this.peek();
    if (token?.type !== 'string') this.fail('a quoted string');
    this.at += 1;
    return token.text;
  }
  number(): number {
    const token = this.peek();
    if (token?.type !== 'number') this.fail('a number');
    this.at += 1;
    return token.value;
  }
  take(): Token {
    const token = this.peek();
    if (!token) this.fail('a value');
    this.at += 1;
    return token;
  }
  end(): void {
    if (!this.done()) this.fail('the end of the command');
  }
}

function describe(token: Token): string {
  if (token.type === 'string') return `"${token.text}"`;
  if (token.type === 'number') return String(token.value);
  if (token.type === 'regex') return String(token.pattern);
  return `"${token.text}"`;
}

/** A comma-separated list of what `item` reads. */
function list<T>(cursor: Cursor, item: () => T): T[] {
  const items = [item()];
  while (cursor.isPunct(',')) {
    cursor.punct(',');
    items.push(item());
  }
  return items;
}

function condition(cursor: Cursor): InsightsCondition {
  if (cursor.isWord('ispresent')) {
    cursor.word();
    cursor.punct('(');
    const field = cursor.word();
    cursor.punct(')');
    return { kind: 'ispresent', field };
  }
  const field = cursor.word();
  if (cursor.isPunct('=')) {
    cursor.punct('=');
    const token = cursor.take();
    if (token.type === 'string') return { kind: 'equals', field, value: token.text };
    if (token.type === 'number') return { kind: 'equals', field, value: token.value };
    throw new UnsupportedQueryError(
      `filter: expected a string or a number after "${field} =", found ${describe(token)}`,
    );
  }
  cursor.keyword('like', '=');
  const token = cursor.take();
  if (token.type === 'regex') return { kind: 'like', field, pattern: token.pattern };
  if (token.type === 'string') return { kind: 'like', field, pattern: new RegExp(escapeRegex(token.text)) };
  throw new UnsupportedQueryError(
    `filter: expected /regex/ or "text" after "${field} like", found ${describe(token)}`,
  );
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function aggregate(cursor: Cursor): InsightsAggregate {
  const fn = cursor.keyword('count', 'avg', 'pct', 'sum');
  cursor.punct('(');
  let parsed: DistributiveOmit<InsightsAggregate, 'alias'>;
  if (fn === 'count') {
    const star = cursor.isPunct('*');
    if (star) cursor.punct('*');
    parsed = { fn: 'count', field: star ? undefined : cursor.word() };
  } else if (fn === 'avg') {
    parsed = { fn: 'avg', field: cursor.word() };
  } else if (fn === 'pct') {
    const field = cursor.word();
    cursor.punct(',');
    parsed = { fn: 'pct', field, percentile: cursor.number() };
  } else {
    cursor.keyword('strcontains');
    cursor.punct('(');
    const field = cursor.word();
    cursor.punct(',');
    const text = cursor.string();
    cursor.punct(')');
    parsed = { fn: 'sum-strcontains', field, text };
  }
  cursor.punct(')');
  cursor.keyword('as');
  return { ...parsed, alias: cursor.word('an alias') } as InsightsAggregate;
}

/** One command from its tokens. */
function command(tokens: readonly Token[]): InsightsCommand {
  const head = tokens[0];
  if (head?.type !== 'word') {
    throw new UnsupportedQueryError(
      `expected a command, found ${head ? describe(head) : 'an empty command'}`,
    );
  }
  const name = head.text.toLowerCase();
  const cursor = new Cursor(tokens.slice(1), name);
  let parsed: InsightsCommand;
  if (name === 'fields') {
    parsed = { kind: 'fields', fields: list(cursor, () => cursor.word()) };
  } else if (name === 'filter') {
    const conditions = [condition(cursor)];
    while (cursor.isWord('and')) {
      cursor.word();
      conditions.push(condition(cursor));
    }
    parsed = { kind: 'filter', conditions };
  } else if (name === 'stats') {
    const aggregates = list(cursor, () => aggregate(cursor));
    let by: string[] = [];
    if (cursor.isWord('by')) {
      cursor.word();
      by = list(cursor, () => cursor.word());
    }
    parsed = { kind: 'stats', aggregates, by };
  } else if (name === 'sort') {
    const field = cursor.word();
    const order = cursor.done() ? 'asc' : (cursor.keyword('asc', 'desc') as 'asc' | 'desc');
    parsed = { kind: 'sort', field, order };
  } else if (name === 'limit') {
    parsed = { kind: 'limit', count: cursor.number() };
  } else {
    throw new UnsupportedQueryError(
      `command "${head.text}" is not supported by the local evaluator (supported: fields, filter, stats, sort, limit)`,
    );
  }
  cursor.end();
  return parsed;
}

/**
 * Parses a query of the supported subset into its commands, in order.
 *
 * @throws UnsupportedQueryError naming what it met and what it expected, for anything outside the subset.
 * @example
 * parseInsightsQuery('filter result = "COMPLETED" | stats count(*) as n by messageType');
 */
export function parseInsightsQuery(query: string): InsightsCommand[] {
  const commands: Token[][] = [[]];
  for (const token of tokenize(query)) {
    if (token.type === 'punct' && token.text === '|') commands.push([]);
    else commands.at(-1)?.push(token);
  }
  return commands.map(command);
}

/** Every field a query reads or shows (its aliases excluded), to check them against the fields the worker logs. */
export function referencedFields(commands: readonly InsightsCommand[]): Set<string> {
  const fields = new Set<string>();
  const aliases = new Set<string>();
  for (const parsed of commands) {
    if (parsed.kind === 'fields') for (const field of parsed.fields) fields.add(field);
    if (parsed.kind === 'filter') for (const c of parsed.conditions) fields.add(c.field);
    if (parsed.kind === 'stats') {
      for (const a of parsed.aggregates) {
        if (a.field) fields.add(a.field);
        aliases.add(a.alias);
      }
      for (const field of parsed.by) fields.add(field);
    }
    if (parsed.kind === 'sort' && !aliases.has(parsed.field)) fields.add(parsed.field);
  }
  return fields;
}
