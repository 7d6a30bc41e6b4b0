import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * English messages for every parse the engine makes, passed per parse: zod/mini loads no locale, and a global
 * error map set by the application must not put values into what the worker logs and stores.
 */
const PARSE_CONTEXT = { error: en().localeError };

/**
 * What {@link parseSchema} returns: zod's safe-parse result.
 *
 * @internal
 */
export type ParseResult<T> = z.core.util.SafeParseResult<T>;

/**
 * Parses `value` with `schema` — any zod 4 schema, from `zod` or `zod/mini` — without throwing, with English
 * messages that name the rule or bound and never the value (see {@link describeIssues}).
 *
 * @internal
 */
export function parseSchema<S extends z.core.$ZodType>(schema: S, value: unknown): ParseResult<z.output<S>> {
  return z.safeParse(schema, value, PARSE_CONTEXT);
}

/**
 * Describes zod issues by path and rule only. Zod's messages name the expected type or bound, never the
 * received value, so the result is safe to log and store.
 *
 * @internal
 */
export function describeIssues(error: z.core.$ZodError, prefix = ''): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${prefix}${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
