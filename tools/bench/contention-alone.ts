import { join } from 'node:path';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { startLocalSqs } from '../local/local-sqs.ts';
import { benchContention } from './contention.ts';
import { renderContention } from './render-contention.ts';

/**
 * `npm run bench -- --only contention`: the contention line alone, on the bench's database (DATABASE_URL when set,
 * migrated first; otherwise a throwaway embedded PostgreSQL) and the in-process SQS emulator. Prints the comparison
 * on stdout, progress on stderr.
 */
export async function runContentionAlone(): Promise<void> {
  // The poller's Powertools logger and metrics read the process's environment: one line per record would drown
  // the comparison.
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local: LocalPostgres | undefined = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
  const url = process.env.DATABASE_URL ?? (local as LocalPostgres).url;
  const admin = postgres(url, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 2,
    onnotice: () => {},
  });
  const sqs = await startLocalSqs();
  try {
    await runMigrations(admin, { directory: join(PROJECT_ROOT, 'migrations') });
    log(
      'contention: a hot aggregate and a slow database, drained by the poller, then by the Lambda worker behind the local event source mapping, each at a fixed concurrency, then adaptive',
    );
    console.log(renderContention(await benchContention({ admin, url, sqs, log })));
  } finally {
    await admin.end({ timeout: 5 });
    await sqs.stop();
    await local?.stop();
  }
}
