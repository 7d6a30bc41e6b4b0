import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listMigrations } from '../../lambda/postgres/run-migrations.ts';
import { SECRET_PASSWORD, startBrokenListener } from '../support/broken-listener.ts';
import { copyCheckout } from '../support/checkout-copy.ts';
import { createTestDatabase } from '../support/database.ts';
import { runEntry } from '../support/run-entry.ts';

const MIGRATE = 'bin/migrate.ts';
const db = await createTestDatabase();

describe('npm run migrate (bin/migrate.ts) — a DATABASE_URL that is not PostgreSQL', () => {
  it('exits 2 naming DATABASE_URL and the value, password masked, for a mysql:// URL', async () => {
    // Act
    const result = await runEntry(MIGRATE, [], {
      DATABASE_URL: `mysql://root:${SECRET_PASSWORD}@db.internal:3306/cases`,
    });

    // Assess
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'migration not started: DATABASE_URL must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "mysql://root:***@db.internal:3306/cases"): the scheme must be postgres:// or postgresql://, not mysql://',
    );
  });

  it('fails within the 10 s connect timeout on a listener that never answers, with one connection', async () => {
    // Prepare
    const listener = await startBrokenListener('silent');

    // Act
    const result = await runEntry(MIGRATE, [], { DATABASE_URL: listener.url });

    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `migration failed: Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): no answer within 10 s (connect timeout). Check that DATABASE_URL names a PostgreSQL server that is running and reachable from here.`,
    );
    expect(result.elapsedMs).toBeLessThan(20_000);
    expect(listener.connections).toBe(1);
  });

  it('stops after 8 attempts on a listener that closes every connection at once', async () => {
    // Prepare
    const listener = await startBrokenListener('close');

    // Act
    const result = await runEntry(MIGRATE, [], { DATABASE_URL: listener.url });

    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `migration failed: Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): 8 connection attempts in a row were closed or refused`,
    );
    expect(result.stderr).not.toContain(SECRET_PASSWORD);
    expect(result.elapsedMs).toBeLessThan(20_000);
    expect(listener.connections).toBe(8);
  });

  it('exits 2 with one line naming a migration file that breaks the naming rule, and applies nothing', async () => {
    // Prepare: a checkout whose migrations/ holds a user's next table numbered with four digits
    const copy = await copyCheckout();
    onTestFinished(() => copy.remove());
    const applied = (await listMigrations(fileURLToPath(new URL('../../migrations', import.meta.url))))
      .length;
    const next = applied + 1;
    const misnamed = `${String(next).padStart(4, '0')}_invoices.sql`;
    await writeFile(join(copy.root, 'migrations', misnamed), 'create table invoices (id text);');

    // Act
    const result = await runEntry(MIGRATE, [], { DATABASE_URL: db.url }, 40_000, copy.root);

    // Assess
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `migration failed: migration file ${misnamed} in ${join(copy.root, 'migrations')} does not match the naming rule NNNNN_name.sql (five digits, an underscore, a name: 00001_worker-inbox.sql), so it would never run: rename ${misnamed} to ${String(next).padStart(5, '0')}_invoices.sql`,
    );
    const [row] = await db.sql`select max(migration_id)::int as id from schema_migrations`;
    expect(row?.id).toBe(applied);
  });
});
