import { join } from 'node:path';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { runMigrations } from '../../lambda/postgres/run-migrations.ts';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import { type LocalPostgres, startLocalPostgres } from '../local/local-postgres.ts';
import { benchPayloadMemory } from './payload-memory.ts';
import { renderPayloadMemory } from './render-payload-memory.ts';

/**
 * `npm run bench -- --only payload-memory`: the payload-memory line alone, on the bench's database (DATABASE_URL
 * when set, migrated first; otherwise a throwaway embedded PostgreSQL). Prints the line on stdout, progress on
 * stderr.
 */
export async function runPayloadMemoryAlone(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local: LocalPostgres | undefined = process.env.DATABASE_URL ? undefined : await startLocalPostgres();
  const url = process.env.DATABASE_URL ?? (local as LocalPostgres).url;
  const admin = postgres(url, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  try {
    await runMigrations(admin, { directory: join(PROJECT_ROOT, 'migrations') });
    log("the worker's peak memory per payloadRef size");
    console.log(renderPayloadMemory(await benchPayloadMemory({ admin, url, log })));
  } finally {
    await admin.end({ timeout: 5 });
    await local?.stop();
  }
}
