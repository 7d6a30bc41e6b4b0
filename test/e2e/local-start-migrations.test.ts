import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CheckoutCopy, copyCheckout } from '../support/checkout-copy.ts';
import { createTestDatabase } from '../support/database.ts';
import { projectMigrations } from '../support/project-migrations.ts';
import { runEntry } from '../support/run-entry.ts';

const db = await createTestDatabase();
const copies: CheckoutCopy[] = [];
afterAll(async () => {
  for (const copy of copies) await copy.remove();
});

/** A copy of the checkout with `files` added to its `migrations/` folder. */
async function checkoutWithMigrations(files: Record<string, string>): Promise<CheckoutCopy> {
  const copy = await copyCheckout();
  copies.push(copy);
  for (const [file, text] of Object.entries(files))
    await writeFile(join(copy.root, 'migrations', file), text);
  return copy;
}

/** Runs `npm start`'s entry in `copy` against the test database; asserts it printed no stack trace. */
async function start(copy: CheckoutCopy) {
  const result = await runEntry(
    'bin/local.ts',
    ['--handlers', 'test/fixtures/first-handler/invoice-worker.ts'],
    { DATABASE_URL: db.url, POWERTOOLS_LOG_LEVEL: 'SILENT' },
    60_000,
    copy.root,
  );
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return result;
}

const lastLine = (stderr: string) => stderr.trim().split('\n').at(-1);
const invoicesTables = async () =>
  (await db.sql`select count(*)::int as n from information_schema.tables where table_name = 'invoices'`)[0]
    ?.n;

describe('npm start (bin/local.ts) — a migrations folder that breaks the naming rule', () => {
  it('exits 2 with one line naming a four-digit .sql file, the rule and the rename, and applies nothing', async () => {
    // Prepare: the user's table numbered with four digits; a README beside it is not a migration
    const copy = await checkoutWithMigrations({
      '0011_invoices.sql':
        'create table invoices (invoice_id text primary key, total numeric(12, 2) not null);',
      'README.md': 'Our migrations.',
    });

    // Act
    const result = await start(copy);

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toBe(
      `npm start: migration file 0011_invoices.sql in ${join(copy.root, 'migrations')} does not match the naming rule NNNNN_name.sql (five digits, an underscore, a name: 00001_worker-inbox.sql), so it would never run: rename 0011_invoices.sql to 00011_invoices.sql`,
    );
    expect(await invoicesTables()).toBe(0);
  });

  it('exits 2 with one line naming the missing number between its neighbours for a gap', async () => {
    // Prepare: the next number skipped
    const { last, lastNumber, next } = projectMigrations();
    const after = `${String(lastNumber + 2).padStart(5, '0')}_invoices.sql`;
    const copy = await checkoutWithMigrations({
      [after]: 'create table invoices (invoice_id text primary key, total numeric(12, 2) not null);',
    });

    // Act
    const result = await start(copy);

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toBe(
      `npm start: migration ${next} is missing between ${last} and ${after} in ${join(copy.root, 'migrations')}: restore it, or renumber ${after} to ${next} if it has not landed yet (never renumber one that has)`,
    );
    const [current] = await db.sql`select max(migration_id)::int as id from schema_migrations`;
    expect(current?.id).toBe(lastNumber);
    expect(await invoicesTables()).toBe(0);
  });
});
