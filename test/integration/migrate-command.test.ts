import { describe, expect, it } from 'vitest';
import { SECRET_PASSWORD, startBrokenListener } from '../support/broken-listener.ts';
import { runEntry } from '../support/run-entry.ts';

const MIGRATE = 'bin/migrate.ts';

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
});
