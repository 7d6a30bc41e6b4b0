import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { DEFAULT_ROLE_TIMEOUTS, setRoleTimeouts } from '../../lambda/postgres/provision-roles.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { startLaneThreads } from './lane-threads.ts';
import { renderRetentionPurge } from './render-retention-purge.ts';
import { benchRetentionPurge } from './retention-purge.ts';

/**
 * `npm run bench -- --only purge`: the retention purge line alone, on the bench's database (DATABASE_URL when
 * set, migrated first; otherwise a throwaway embedded PostgreSQL) with the worker role's timeouts, as the full
 * bench runs it. Prints the line on stdout, progress on stderr.
 */
export async function runRetentionPurgeAlone(rows: number): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local: LocalPostgres | undefined = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
  const url = process.env.DATABASE_URL ?? (local as LocalPostgres).url;
  const admin = postgres(url, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  const threads = await startLaneThreads(1);
  try {
    await runMigrations(admin, { directory: join(PROJECT_ROOT, 'migrations') });
    const [{ role, database } = { role: '', database: '' }] = await admin<
      { role: string; database: string }[]
    >`
      select current_user as role, current_database() as database
    `;
    await setRoleTimeouts(admin, role, database, DEFAULT_ROLE_TIMEOUTS);
    log(`retention purge of ${rows} rows while the worker runs`);
    const result = await benchRetentionPurge({
      rows,
      runId: randomBytes(3).toString('hex'),
      admin,
      url,
      threads,
      log,
    });
    console.log(renderRetentionPurge(result));
  } finally {
    await admin.end({ timeout: 5 });
    await threads.close();
    await local?.stop();
  }
}
