import { UsageError } from '../ops/errors.ts';

/** A page's query string or an action's form, as fastify parses it (a repeated name: its values). */
export type Params = Readonly<Record<string, string | string[] | undefined>>;

/** One text parameter: its first value, trimmed; undefined when absent or empty. */
export function param(params: Params, name: string): string | undefined {
  const value = params[name];
  const first = (Array.isArray(value) ? value[0] : value)?.trim();
  return first === undefined || first === '' ? undefined : first;
}

/** A required text parameter, or a UsageError naming the field. */
export function requiredParam(params: Params, name: string, what: string): string {
  const value = param(params, name);
  if (value === undefined) throw new UsageError(`${what} is missing: fill in the "${name}" field.`);
  return value;
}

/** A checkbox: present with any value but "false". */
export function flagParam(params: Params, name: string): boolean {
  const value = param(params, name);
  return value !== undefined && value !== 'false';
}
