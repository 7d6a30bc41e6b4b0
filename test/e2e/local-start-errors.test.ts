import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { freePort } from '../../tools/local/local-postgres.ts';
import { SECRET_PASSWORD, startBrokenListener } from '../support/broken-listener.ts';
import { createTestDatabase } from '../support/database.ts';
import { runEntry } from '../support/run-entry.ts';

const db = await createTestDatabase();
const START = 'bin/local.ts';

/** Runs `npm start` with `env` and returns its result; asserts it printed no stack trace and no password. */
async function start(env: Record<string, string>) {
  const result = await runEntry(START, ['--messages', '20'], env);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stdout + result.stderr).not.toContain(SECRET_PASSWORD);
  return result;
}

/** The line npm start ended with. */
const lastLine = (stderr: string) => stderr.trim().split('\n').at(-1);

describe('npm start (bin/local.ts) — a DATABASE_URL or SQS_ENDPOINT that cannot be used', () => {
  it('exits 2 with one line naming DATABASE_URL for a wrong password', async () => {
    // Prepare
    const url = new URL(db.url);
    url.password = SECRET_PASSWORD;

    // Act
    const result = await start({ DATABASE_URL: url.toString() });

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toMatch(
      /^npm start: PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\) rejected the login: password authentication failed for user "postgres"\. Fix the user or password in DATABASE_URL\.$/,
    );
  });

  it('exits 2 naming DATABASE_URL and the roles when its user may not provision the database roles', async () => {
    // Prepare: a user that owns its database (it may migrate it) but may not alter roles (no CREATEROLE)
    const suffix = randomBytes(4).toString('hex');
    const [user, database] = [`t_owner_${suffix}`, `t_owned_${suffix}`];
    await db.sql.unsafe(`create role ${user} with login password 'owner-only-password'`);
    await db.sql.unsafe(`create database ${database} owner ${user}`);
    onTestFinished(async () => {
      await db.sql.unsafe(`drop database if exists ${database} with (force)`);
      await db.sql.unsafe(`drop role if exists ${user}`);
    });
    const url = new URL(db.url);
    Object.assign(url, { username: user, password: 'owner-only-password', pathname: `/${database}` });

    // Act
    const result = await start({ DATABASE_URL: url.toString() });

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toMatch(
      /^npm start: PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\) refused to provision the database roles npm start runs its components as \(sqs_worker, sqs_outbox_relay, sqs_worker_ops, sqs_worker_health, sqs_worker_retention\): permission denied .*\. Connect as a user that may create roles and grant pg_monitor \(CREATEROLE with ADMIN on pg_monitor, or the server's superuser\)\.$/,
    );
    expect(result.stderr).not.toContain('owner-only-password');
  });

  it('exits 2 naming DATABASE_URL when the connection is refused, and for a mysql:// URL', async () => {
    // Prepare
    const port = await freePort();

    // Act
    const refused = await start({
      DATABASE_URL: `postgres://worker:${SECRET_PASSWORD}@127.0.0.1:${port}/cases`,
    });
    const mysql = await start({ DATABASE_URL: `mysql://root:${SECRET_PASSWORD}@127.0.0.1:3306/cases` });

    // Assess
    expect(refused.code).toBe(2);
    expect(lastLine(refused.stderr)).toBe(
      `npm start: Cannot connect to PostgreSQL at 127.0.0.1:${port} (DATABASE_URL): connection refused (nothing listens on that port). Check that DATABASE_URL names a PostgreSQL server that is running and reachable from here.`,
    );
    expect(mysql.code).toBe(2);
    expect(lastLine(mysql.stderr)).toBe(
      'npm start: DATABASE_URL must be a PostgreSQL connection URL such as postgres://user:password@host:5432/database (given "mysql://root:***@127.0.0.1:3306/cases"): the scheme must be postgres:// or postgresql://, not mysql://',
    );
  });

  it('gives up within the connect timeout on a listener that never answers, and after 8 attempts on one that closes', async () => {
    // Prepare
    const silent = await startBrokenListener('silent');
    const closing = await startBrokenListener('close');

    // Act
    const [hung, closed] = await Promise.all([
      start({ DATABASE_URL: silent.url }),
      start({ DATABASE_URL: closing.url }),
    ]);

    // Assess
    expect(hung.code).toBe(2);
    expect(lastLine(hung.stderr)).toBe(
      `npm start: Cannot connect to PostgreSQL at 127.0.0.1:${silent.port} (DATABASE_URL): no answer within 10 s (connect timeout). Check that DATABASE_URL names a PostgreSQL server that is running and reachable from here.`,
    );
    expect(hung.elapsedMs).toBeLessThan(20_000);
    expect(silent.connections).toBe(1);
    expect(closed.code).toBe(2);
    expect(lastLine(closed.stderr)).toContain(
      `npm start: Cannot connect to PostgreSQL at 127.0.0.1:${closing.port} (DATABASE_URL): 8 connection attempts in a row were closed or refused`,
    );
    expect(closing.connections).toBe(8);
  });

  it('exits 2 with one line naming SQS_ENDPOINT when nothing listens there', async () => {
    // Prepare
    const port = await freePort();

    // Act
    const result = await start({ DATABASE_URL: db.url, SQS_ENDPOINT: `http://127.0.0.1:${port}` });

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toMatch(
      new RegExp(
        `^npm start: Cannot use SQS at http://127\\.0\\.0\\.1:${port} \\(SQS_ENDPOINT\\): .*ECONNREFUSED.*\\. Check that SQS_ENDPOINT is the URL of a running SQS emulator, or unset it to use the built-in fauxqs\\.$`,
      ),
    );
  });

  it("uses the AWS SDK's AWS_ENDPOINT_URL_SQS when SQS_ENDPOINT is unset, and names it", async () => {
    // Prepare
    const port = await freePort();

    // Act
    const result = await start({ DATABASE_URL: db.url, AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${port}` });

    // Assess
    expect(result.code).toBe(2);
    expect(lastLine(result.stderr)).toMatch(
      new RegExp(
        `^npm start: Cannot use SQS at http://127\\.0\\.0\\.1:${port} \\(AWS_ENDPOINT_URL_SQS\\): .*\\. Check that AWS_ENDPOINT_URL_SQS is the URL`,
      ),
    );
  });
});

describe('npm start (bin/local.ts) — --migrations', () => {
  it('exits 2 before anything starts when the folder does not exist, naming it and where it was looked for', async () => {
    // Act
    const result = await runEntry(START, ['--migrations', 'no-such-migrations'], { DATABASE_URL: db.url });

    // Assess
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain('Starting PostgreSQL');
    expect(lastLine(result.stderr)).toMatch(
      /^npm start: --migrations no-such-migrations: no such folder \(looked for \/.+\/no-such-migrations\)\. Give the folder holding the package's migrations and yours \(docs\/installed-package\.md\)\.$/,
    );
  });
});
