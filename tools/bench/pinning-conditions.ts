/**
 * What AWS's "Avoiding pinning an RDS Proxy" lists for PostgreSQL, as tests on one statement's text: `SET`
 * commands, `set_config`, resetting a parameter, `PREPARE` / `EXECUTE` / `DEALLOCATE` / `DISCARD`, temporary
 * sequences, tables or views, declaring cursors, `LISTEN`, loading a library module, the sequence functions,
 * and the session-level advisory lock functions (the page notes that the transaction-level ones —
 * `pg_advisory_xact_lock`, `pg_try_advisory_xact_lock` and their `_shared` forms — do not pin); and, for every
 * engine, a statement text above 16 KB and prepared statements (a Parse that names its statement: postgres.js
 * with `prepare: true`).
 *
 * @internal
 */
export const PINNING_CONDITIONS: ReadonlyArray<
  readonly [string, (statement: { text: string; bytes: number; name: string }) => boolean]
> = [
  ['SET', ({ text }) => /^\s*set\s/i.test(text)],
  ['set_config', ({ text }) => /\bset_config\s*\(/i.test(text)],
  ['RESET', ({ text }) => /^\s*reset\s/i.test(text)],
  ['prepared statement command', ({ text }) => /^\s*(?:prepare|execute|deallocate)\s/i.test(text)],
  ['DISCARD', ({ text }) => /^\s*discard\s/i.test(text)],
  [
    'temporary table, sequence or view',
    ({ text }) => /\bcreate\s+(?:(?:local|global)\s+)?(?:temp|temporary)\s/i.test(text),
  ],
  ['DECLARE cursor', ({ text }) => /^\s*declare\s/i.test(text)],
  ['LISTEN', ({ text }) => /^\s*listen\s/i.test(text)],
  ['LOAD', ({ text }) => /^\s*load\s/i.test(text)],
  ['sequence function', ({ text }) => /\b(?:nextval|setval|currval|lastval)\s*\(/i.test(text)],
  [
    'session-level advisory lock',
    ({ text }) => /\bpg_(?:try_)?advisory_(?:lock|unlock)(?:_shared|_all)?\s*\(/i.test(text),
  ],
  ['statement text above 16 KB', ({ bytes }) => bytes > 16_384],
  ['named prepared statement', ({ name }) => name !== ''],
];

/**
 * The pinning conditions a statement meets (none, hopefully). `bytes` defaults to the text's UTF-8 size,
 * `name` (of a prepared statement) to none.
 *
 * @internal
 */
export function pinningReasons(
  statement: string | { text: string; bytes?: number; name?: string },
): string[] {
  const { text, bytes, name } = typeof statement === 'string' ? { text: statement } : statement;
  const full = { text, bytes: bytes ?? Buffer.byteLength(text), name: name ?? '' };
  return PINNING_CONDITIONS.filter(([, pins]) => pins(full)).map(([reason]) => reason);
}
