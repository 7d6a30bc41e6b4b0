import postgres from 'postgres';
import { connectOptions } from '../../../../lambda/postgres/connect-options.ts';

/**
 * A small postgres.js client for an operator's session: two connections, no prepared statements (RDS Proxy
 * compatible), named `sqs-worker-ops` in `pg_stat_activity`. A connection that does not open within 10 s, or
 * 8 failed attempts in a row, fail the command with an error naming `setting` and host:port.
 */
export function createOpsSql(databaseUrl: string, setting = 'DATABASE_URL'): postgres.Sql {
  return postgres(databaseUrl, {
    ...connectOptions({ setting, connectTimeoutSeconds: 10 }),
    max: 2,
    prepare: false,
    idle_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'sqs-worker-ops' },
  });
}
