import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { redactValues } from './redact-values.ts';

const localeError = en().localeError;

/**
 * English messages for every parse the engine makes, passed per parse: zod/mini loads no locale, and a global
 * error map set by the application must not put values into what the worker logs and stores. `reportInput`
 * keeps each issue's input until {@link parseSchema} has used it to name the received type; it is removed
 * before the result leaves.
 */
const PARSE_CONTEXT = { error: localeError, reportInput: true };

/** What replaces a path segment that comes from the input: a key of a record, a map, or an unknown key. */
export const KEY_PLACEHOLDER = '<key>';

/**
 * What {@link parseSchema} returns: zod's safe-parse result.
 *
 * @internal
 */
export type ParseResult<T> = z.core.util.SafeParseResult<T>;

/**
 * Parses `value` with `schema` — any zod 4 schema, from `zod` or `zod/mini` — without throwing. On failure the
 * issues carry no input: each path names fields of the schema and array indexes, with every key that came
 * from the input (of a `z.record`, a `z.map`, a catch-all object) replaced by `<key>`; each message names the
 * rule or bound, never the value (see {@link redactIssue}); the issues' `input` is removed. So
 * {@link describeIssues} of the result is safe to log and store.
 *
 * @internal
 */
export function parseSchema<S extends z.core.$ZodType>(schema: S, value: unknown): ParseResult<z.output<S>> {
  const result = z.safeParse(schema, value, PARSE_CONTEXT);
  if (!result.success) {
    const issues = result.error.issues as z.core.$ZodIssue[];
    for (const [index, issue] of issues.entries()) issues[index] = redactIssue(issue, schema);
  }
  return result;
}

/**
 * Describes zod issues by path and rule only (at most five). Safe to log and store for the issues of a
 * {@link parseSchema} result, which carry no input.
 *
 * @internal
 */
export function describeIssues(error: z.core.$ZodError, prefix = ''): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${prefix}${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

/**
 * One issue without input values: its path through {@link redactPath}, its message rebuilt by the English
 * locale from the issue's rule fields (expected type, allowed values, bound, format) — a message written by
 * the schema's author for a built-in check may quote the input, so it is not used — and the fields that hold
 * input (`input`, the unrecognized `keys`, nested issues) removed. A refinement's own message (code `custom`)
 * is kept, with the input replaced by `<value>` where it quotes it.
 *
 * @internal
 */
export function redactIssue(issue: z.core.$ZodIssue, schema: z.core.$ZodType): z.core.$ZodIssue {
  const { input, ...rest } = issue as z.core.$ZodIssue & { input?: unknown };
  const path = redactPath(schema, issue.path);
  switch (rest.code) {
    case 'unrecognized_keys': {
      const count = rest.keys.length;
      return {
        ...rest,
        path,
        keys: [],
        message: `Unrecognized key${count > 1 ? 's' : ''}: ${count} key${count > 1 ? 's' : ''} the schema does not define`,
      };
    }
    case 'invalid_key': {
      const [first] = rest.issues;
      const why = first ? `: ${redactIssue(first, schema).message}` : '';
      return { ...rest, path, issues: [], message: `${ruleMessage({ ...rest, input })}${why}` };
    }
    case 'invalid_union':
      return { ...rest, path, errors: [], message: ruleMessage({ ...rest, input }) };
    case 'custom':
      return { ...rest, path, message: redactValues(rest.message, input) };
    default:
      return { ...rest, path, message: ruleMessage({ ...rest, input }) };
  }
}

/**
 * The English locale's message for an issue: built from its rule fields, the input used only for the name of
 * its type (`received string`).
 */
function ruleMessage(issue: object): string {
  const made = localeError(issue as Parameters<typeof localeError>[0]);
  return (typeof made === 'string' ? made : made?.message) ?? 'Invalid input';
}

interface SchemaDef {
  readonly type: string;
  readonly [field: string]: unknown;
}

const defOf = (schema: unknown): SchemaDef | undefined =>
  (schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;

/** Wrappers whose issues are reported at the wrapped schema's path. */
const INNER_TYPE = new Set([
  'optional',
  'nullable',
  'nonoptional',
  'default',
  'prefault',
  'catch',
  'readonly',
  'success',
  'promise',
]);

/** The concrete schemas `schema` may stand for at one position: wrappers, pipes, unions and lazies opened. */
function candidates(schemas: readonly unknown[]): SchemaDef[] {
  const found: SchemaDef[] = [];
  const seen = new Set<unknown>();
  const queue = [...schemas];
  while (queue.length > 0 && seen.size < 200) {
    const schema = queue.shift();
    if (seen.has(schema)) continue;
    seen.add(schema);
    const def = defOf(schema);
    if (!def) continue;
    if (INNER_TYPE.has(def.type)) queue.push(def.innerType);
    else if (def.type === 'pipe') queue.push(def.in, def.out);
    else if (def.type === 'union') queue.push(...((def.options as unknown[]) ?? []));
    else if (def.type === 'intersection') queue.push(def.left, def.right);
    else if (def.type === 'lazy') queue.push((def.getter as () => unknown)());
    else found.push(def);
  }
  return found;
}

/** True when `segment` is one of the values a record's key schema allows (an enum or a literal). */
function isDeclaredKey(keyType: unknown, segment: PropertyKey): boolean {
  return candidates([keyType]).some(
    (def) =>
      (def.type === 'enum' && Object.values(def.entries as object).includes(segment)) ||
      (def.type === 'literal' && (def.values as unknown[]).includes(segment)),
  );
}

/**
 * An issue path with every segment that came from the input replaced by `<key>`: a segment stays when the
 * schema names it (a property of an object schema, a value of a record's enum key) or when it is an array or
 * tuple index. Walks the schema along the path, through optional, nullable, default, pipe, union, intersection
 * and lazy schemas; a segment the walk cannot explain is replaced too.
 *
 * @internal
 */
export function redactPath(schema: z.core.$ZodType, path: readonly PropertyKey[]): PropertyKey[] {
  let current: unknown[] = [schema];
  return path.map((segment) => {
    const next: unknown[] = [];
    let named = false;
    let indexed = false;
    let keyed = false;
    for (const def of candidates(current)) {
      switch (def.type) {
        case 'object': {
          const shape = def.shape as Record<string, unknown>;
          if (typeof segment === 'string' && Object.hasOwn(shape, segment)) {
            named = true;
            next.push(shape[segment]);
          } else if (def.catchall && defOf(def.catchall)?.type !== 'never') {
            next.push(def.catchall);
          }
          break;
        }
        case 'record':
          if (isDeclaredKey(def.keyType, segment)) named = true;
          next.push(def.valueType);
          break;
        case 'map':
          keyed = true;
          next.push(def.valueType);
          break;
        case 'array':
          if (typeof segment === 'number') indexed = true;
          next.push(def.element);
          break;
        case 'tuple':
          if (typeof segment === 'number') {
            indexed = true;
            next.push((def.items as unknown[])[segment] ?? def.rest);
          }
          break;
      }
    }
    current = next;
    return named || (indexed && !keyed) ? segment : KEY_PLACEHOLDER;
  });
}
