import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lambda/errors.ts';

describe('Module: lambda/handlers/worker.ts — an invalid DATABASE_URL', () => {
  it('fails the cold start with a ConfigError naming DATABASE_URL, password masked (not TypeError: Invalid URL)', async () => {
    // Prepare: a password with an unescaped "/", which postgres.js could not parse.
    process.env.DATABASE_URL = 'postgres://worker:pa/ss@db.internal:5432/cases';

    // Act
    const error = await import('../../lambda/handlers/worker.ts').then(
      () => undefined,
      (caught: unknown) => caught,
    );

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'Invalid worker configuration:\n- DATABASE_URL must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "postgres://worker:***@db.internal:5432/cases"): it is not a valid URL (a password with @, /, : or # must be percent-encoded)',
    );
  });
});
