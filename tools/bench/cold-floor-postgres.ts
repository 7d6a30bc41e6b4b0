import postgres from 'postgres';

/**
 * The cold-start floor of a PostgreSQL worker (`tools/bench/cold-floor.ts`): an empty handler that imports postgres.js
 * and makes its client at module scope, as every handler on it does (no connection is opened before a query).
 */
const sql = postgres(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:9/none', { max: 1, prepare: false });

/** Does nothing: the floor is the import. */
export const handler = async (): Promise<number> => sql.options.max;
