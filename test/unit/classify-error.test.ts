import { describe, expect, it } from 'vitest';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { classifyPostgresError } from '../../lambda/stores/postgres/classify-postgres-error.ts';
import { applyAttemptPolicy, msUntilDue } from '../../lambda/worker/attempt-policy.ts';
import { classifyError } from '../../lambda/worker/classify-error.ts';

const pgError = (code: string, extra: Record<string, string> = {}) =>
  Object.assign(new Error(`message quoting a value "secret"`), { name: 'PostgresError', code, ...extra });

describe('Function: classifyPostgresError()', () => {
  it.each([
    ['40001', 'SERIALIZATION_FAILURE', false],
    ['40P01', 'DEADLOCK_DETECTED', false],
    ['55P03', 'LOCK_TIMEOUT', false],
    ['57014', 'QUERY_CANCELED', false],
    ['53300', 'TOO_MANY_CONNECTIONS', true],
    ['57P01', 'ADMIN_SHUTDOWN', true],
    ['57P02', 'CRASH_SHUTDOWN', true],
    ['57P03', 'CANNOT_CONNECT_NOW', true],
    ['08006', 'CONNECTION_EXCEPTION', true],
    ['XX000', 'POSTGRES_XX000', false],
  ])('treats SQLSTATE %s as retryable %s (connection-class: %s)', (sqlstate, code, connection) => {
    expect(classifyPostgresError(pgError(sqlstate))).toMatchObject({ retryable: true, code, connection });
  });

  it.each([
    ['22P02', 'DATA_EXCEPTION'],
    ['22001', 'DATA_EXCEPTION'],
    ['23505', 'CONSTRAINT_VIOLATION'],
    ['23503', 'CONSTRAINT_VIOLATION'],
  ])('treats SQLSTATE %s as terminal %s, keeping values out of the message', (sqlstate, code) => {
    // Act
    const failure = classifyPostgresError(
      pgError(sqlstate, { table_name: 'cases', constraint_name: 'cases_pkey' }),
    );

    // Assess
    expect(failure).toMatchObject({ retryable: false, code, connection: false });
    expect(failure.message).not.toContain('secret');
    expect(failure.message).toContain('table cases, constraint cases_pkey');
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT'])(
    'treats network error %s raised by postgres.js for a query as retryable and connection-class',
    (errno) => {
      // postgres.js attaches the query to the errors it raises (as a non-enumerable property).
      const error = Object.defineProperty(
        Object.assign(new Error('connect failed'), { code: errno }),
        'query',
        {
          value: 'select 1',
        },
      );
      expect(classifyPostgresError(error)).toMatchObject({
        retryable: true,
        code: 'DATABASE_UNAVAILABLE',
        connection: true,
      });
    },
  );

  it('names the object, the role and the kind of statement of a permission denied (42501): the missing grant', () => {
    // Prepare: PostgreSQL's message names the table only; postgres.js attaches the statement's text.
    const denied = Object.defineProperty(
      Object.assign(new Error('permission denied for table ledger_entries'), {
        name: 'PostgresError',
        code: '42501',
      }),
      'query',
      { value: '\n      insert into ledger_entries (entry_id, amount) values ($1, $2)' },
    );
    const bare = Object.assign(new Error('permission denied to set parameter "x"'), {
      name: 'PostgresError',
      code: '42501',
    });

    // Act
    const failure = classifyPostgresError(denied, { databaseUser: 'sqs_worker' });
    const unnamed = classifyPostgresError(bare);

    // Assess: retryable (a deploy adds the grant), and the message says what to grant to whom
    expect(failure).toEqual({
      retryable: true,
      code: 'POSTGRES_42501',
      message:
        'PostgreSQL 42501: permission denied for table ledger_entries to database role sqs_worker (an insert statement); grant it to the role in lambda/postgres/provision-roles.ts (the migration function applies it on deploy)',
      connection: false,
    });
    expect(unnamed.message).toBe(
      "PostgreSQL 42501: permission denied to the connection's database role; grant it to the role in lambda/postgres/provision-roles.ts (the migration function applies it on deploy)",
    );
  });

  it("does not take a handler's own network error for a database outage", () => {
    // A handler's HTTP call failing with ECONNREFUSED says nothing about the database.
    const failure = classifyPostgresError(
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }),
    );
    expect(failure).toMatchObject({ retryable: true, code: 'NETWORK_ERROR', connection: false });
  });
});

describe('Function: classifyError()', () => {
  it('keeps the code of RetryableError and TerminalError', () => {
    expect(classifyError(new RetryableError('RATE_LIMITED', 'slow down'))).toMatchObject({
      retryable: true,
      code: 'RATE_LIMITED',
    });
    expect(classifyError(new TerminalError('CASE_NOT_FOUND', 'no case'))).toMatchObject({
      retryable: false,
      code: 'CASE_NOT_FOUND',
    });
  });

  it('describes an unknown error by name and location only, never by its message (which can quote input)', () => {
    // Prepare: JSON.parse quotes the text it failed on.
    let thrown: unknown;
    try {
      JSON.parse('{"accountId": "ACC-SECRET-42", oops');
    } catch (error) {
      thrown = error;
    }

    // Act
    const failure = classifyError(thrown);

    // Assess
    expect(failure).toMatchObject({ retryable: true, code: 'UNHANDLED_ERROR', connection: false });
    expect(failure.message).not.toContain('ACC-SECRET-42');
    expect(failure.message).toMatch(/^SyntaxError at .*classify-error\.test\.ts:\d+:\d+; message withheld/);
  });
});

describe('Function: applyAttemptPolicy()', () => {
  const retryable = { retryable: true, code: 'UNHANDLED_ERROR', message: 'boom', connection: false };
  const now = new Date('2026-07-06T10:00:00Z');
  const defaults = { maxBusinessAttempts: 10 };

  it('keeps a retryable failure retryable within the budget', () => {
    expect(
      applyAttemptPolicy(retryable, { policy: { maxBusinessAttempts: 3 }, attempts: 2, now, defaults })
        .retryable,
    ).toBe(true);
  });

  it('makes it terminal at maxBusinessAttempts, falling back to the worker default', () => {
    expect(
      applyAttemptPolicy(retryable, { policy: { maxBusinessAttempts: 3 }, attempts: 3, now, defaults })
        .retryable,
    ).toBe(false);
    expect(applyAttemptPolicy(retryable, { policy: null, attempts: 9, now, defaults }).retryable).toBe(true);
    expect(applyAttemptPolicy(retryable, { policy: null, attempts: 10, now, defaults }).retryable).toBe(
      false,
    );
  });

  it('makes it terminal when its code is listed or retryableUntil has passed', () => {
    expect(
      applyAttemptPolicy(retryable, {
        policy: { terminalAfterCodes: ['UNHANDLED_ERROR'] },
        attempts: 1,
        now,
        defaults,
      }).retryable,
    ).toBe(false);
    expect(
      applyAttemptPolicy(retryable, {
        policy: { retryableUntil: '2026-07-06T09:59:59Z' },
        attempts: 1,
        now,
        defaults,
      }).retryable,
    ).toBe(false);
    expect(
      applyAttemptPolicy(retryable, {
        policy: { retryableUntil: '2026-07-06T10:00:01Z' },
        attempts: 1,
        now,
        defaults,
      }).retryable,
    ).toBe(true);
  });
});

describe('Function: msUntilDue()', () => {
  const now = Date.parse('2026-07-06T10:00:00Z');

  it('counts down to notBefore and is 0 or less once it is due or when there is none', () => {
    expect(msUntilDue({ notBefore: '2026-07-06T10:00:30Z' }, now)).toBe(30_000);
    expect(msUntilDue({ notBefore: '2026-07-06T09:59:59Z' }, now)).toBe(-1000);
    expect(msUntilDue({ notBefore: null }, now)).toBe(0);
    expect(msUntilDue(undefined, now)).toBe(0);
  });
});
