/**
 * The options of this project's patched postgres.js (patches/postgres+3.4.9.patch) that take round trips off a
 * transaction under `prepare: false`, which RDS Proxy needs (it pins a client that uses named prepared statements).
 * Spread them into the options of the worker's client ({@link createSql} does). A postgres.js without the patch (a
 * project that installs this package gets it as published) ignores them: it then sends what it always did.
 *
 * - `cast_types`: an unnamed statement whose every parameter type is known — every occurrence of the parameter cast
 *   to a built-in type (`${key}::varchar`, `${keys}::text[]`), or given (`sql.typed`, a `Date`, a boolean, a
 *   `Buffer`, a bigint) — is sent in one round trip: Parse with those types, Bind, Execute and Sync at once. Without
 *   it postgres.js describes every parameterized statement first (Parse, Describe, Sync) and waits for the types,
 *   one round trip more per statement. The types are the ones the server's describe would answer, so the values
 *   are serialized as before; a statement with a parameter it cannot type is described as before.
 * - `pipeline_begin`: `sql.begin` sends no BEGIN of its own; the transaction's first statement carries it, in the
 *   statement's Sync. A failed BEGIN therefore skips the statement (it never runs outside the transaction) and the
 *   transaction fails with BEGIN's error without sending anything more; statements issued before the first one is
 *   answered wait for it.
 *
 * Both keep every statement unnamed, so neither pins an RDS Proxy connection.
 *
 * @example
 * ```ts
 * const sql = postgres(url, { prepare: false, max: 1, ...ROUND_TRIP_OPTIONS });
 * ```
 */
export const ROUND_TRIP_OPTIONS = { cast_types: true, pipeline_begin: true } as const;
