import type postgres from 'postgres';

/**
 * The breaker's database-unavailable signal: one `select 1` through the same path the worker takes (the proxy,
 * IAM authentication, the worker's database user). Rejects with the connection error when the database cannot
 * be reached; the breaker bounds it with its probe timeout.
 *
 * Why a probe of its own and not the worker's metrics (CloudWatch GetMetricData): a metric of failed records
 * exists only while the worker is invoked, so once the mapping is disabled it cannot tell that the database is
 * back; EMF metrics arrive a minute or more late; and a probe runs against a real PostgreSQL in the tests.
 */
export async function probeDatabase(sql: postgres.Sql): Promise<void> {
  await sql`select 1 as ok`;
}
