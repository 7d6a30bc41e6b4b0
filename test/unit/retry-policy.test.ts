import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { RetryableError } from '../../lambda/errors.ts';
import { formatRetryPolicy, parseRetryPolicy } from '../../lambda/retry-policy-setting.ts';
import { applyAttemptPolicy } from '../../lambda/worker/attempt-policy.ts';
import { classifyError } from '../../lambda/worker/classify-error.ts';
import { retryVisibility } from '../../lambda/worker/retry-visibility.ts';

const none = { codes: [] as string[], setting: 'WORKER_HANDLER_FAILURE_CODES' };
const parse = (text: string, own = none) => parseRetryPolicy(text, 'WORKER_RETRY_POLICY', own);

describe('Function: parseRetryPolicy()', () => {
  it('reads CODE=base:max[:attempts] entries of toolkit, POSTGRES_ and own codes', () => {
    // Act
    const parsed = parse(' THROTTLED=5:300 , POSTGRES_40001=0:10,LEDGER_RATE_LIMITED=30:3600:8', {
      codes: ['LEDGER_RATE_LIMITED'],
      setting: 'WORKER_HANDLER_FAILURE_CODES',
    });

    // Assess
    expect(parsed).toEqual({
      problems: [],
      policy: {
        THROTTLED: { baseSeconds: 5, maxSeconds: 300 },
        POSTGRES_40001: { baseSeconds: 0, maxSeconds: 10 },
        LEDGER_RATE_LIMITED: { baseSeconds: 30, maxSeconds: 3600, maxAttempts: 8 },
      },
    });
  });

  it('reads unset and empty as no policy', () => {
    expect(parseRetryPolicy(undefined, 'WORKER_RETRY_POLICY', none)).toEqual({ policy: {}, problems: [] });
    expect(parse('')).toEqual({ policy: {}, problems: [] });
  });

  it('names the value and the fix of each bad entry, all at once', () => {
    // Act
    const { problems, policy } = parse(
      'THROTTELD=5:300,THROTTLED=-1:300,LOCK_TIMEOUT=600:60,DEADLOCK_DETECTED=1:50000,NETWORK_ERROR=1:2:0,TOO_MANY_CONNECTIONS=a:5,CASE_NOT_FOUND,THROTTLED=1:2,SERIALIZATION_FAILURE=1:2',
    );

    // Assess
    expect(problems).toEqual([
      'WORKER_RETRY_POLICY names an unknown failure code "THROTTELD" (entry "THROTTELD=5:300"): use a toolkit code (docs/semantics.md lists them), POSTGRES_<sqlstate>, or, for your handlers\' own code (the example domain\'s too), list it in WORKER_HANDLER_FAILURE_CODES',
      "WORKER_RETRY_POLICY THROTTLED: baseSeconds must be a whole number of seconds from 0 to 42300 (given -1): 42300 s is SQS's 12-hour visibility maximum less the 15 minutes a Lambda run may have held the message; write one in that range",
      'WORKER_RETRY_POLICY LOCK_TIMEOUT: maxSeconds (60) must not be below baseSeconds (600); raise the maximum or lower the base',
      "WORKER_RETRY_POLICY DEADLOCK_DETECTED: maxSeconds must be a whole number of seconds from 0 to 42300 (given 50000): 42300 s is SQS's 12-hour visibility maximum less the 15 minutes a Lambda run may have held the message; write one in that range",
      "WORKER_RETRY_POLICY NETWORK_ERROR: maxAttempts must be a whole number from 1 to 1000 (given 0); leave it out to use the worker's maxBusinessAttempts",
      'WORKER_RETRY_POLICY TOO_MANY_CONNECTIONS: "a" is not a number (entry "TOO_MANY_CONNECTIONS=a:5"); write it as CODE=base:max or CODE=base:max:attempts (seconds, whole numbers), e.g. THROTTLED=5:300',
      'WORKER_RETRY_POLICY has an entry "CASE_NOT_FOUND" that is not CODE=base:max[:attempts]; write it as CODE=base:max or CODE=base:max:attempts (seconds, whole numbers), e.g. THROTTLED=5:300',
      'WORKER_RETRY_POLICY names THROTTLED twice; keep one entry for it',
    ]);
    expect(policy).toEqual({ SERIALIZATION_FAILURE: { baseSeconds: 1, maxSeconds: 2 } });
  });

  it('reads back what formatRetryPolicy writes, for any valid policy', () => {
    const codes = ['THROTTLED', 'LOCK_TIMEOUT', 'OWN_CODE', 'POSTGRES_55P03', 'UNHANDLED_ERROR'];
    const entry = fc
      .tuple(fc.integer({ min: 0, max: 42_300 }), fc.integer({ min: 0, max: 42_300 }))
      .chain(([a, b]) =>
        fc.record(
          {
            baseSeconds: fc.constant(Math.min(a, b)),
            maxSeconds: fc.constant(Math.max(a, b)),
            maxAttempts: fc.integer({ min: 1, max: 1000 }),
          },
          { requiredKeys: ['baseSeconds', 'maxSeconds'] },
        ),
      );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...codes), entry), (policy) => {
        const parsed = parse(formatRetryPolicy(policy), { codes: ['OWN_CODE'], setting: 'X' });
        expect(parsed).toEqual({ policy, problems: [] });
      }),
    );
  });

  it('never throws and never keeps an entry out of range, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        const { policy } = parse(`THROTTLED=${text}`);
        for (const entry of Object.values(policy)) {
          expect(Number.isInteger(entry.baseSeconds) && entry.baseSeconds >= 0).toBe(true);
          expect(entry.maxSeconds).toBeGreaterThanOrEqual(entry.baseSeconds);
          expect(entry.maxSeconds).toBeLessThanOrEqual(42_300);
        }
      }),
    );
  });
});

describe('Function: loadConfig() WORKER_RETRY_POLICY', () => {
  const env = { DATABASE_URL: 'postgres://worker@localhost:5432/app' };

  it('reads the policy with the handlers own codes', () => {
    // Act
    const config = loadConfig({
      ...env,
      WORKER_RETRY_POLICY: 'THROTTLED=5:300,LEDGER_RATE_LIMITED=30:3600:8',
      WORKER_HANDLER_FAILURE_CODES: 'LEDGER_RATE_LIMITED, LEDGER_DOWN',
    });

    // Assess
    expect(config.retryPolicy).toEqual({
      THROTTLED: { baseSeconds: 5, maxSeconds: 300 },
      LEDGER_RATE_LIMITED: { baseSeconds: 30, maxSeconds: 3600, maxAttempts: 8 },
    });
    expect(loadConfig(env).retryPolicy).toEqual({});
  });

  it('fails the cold start naming an own code not listed, and a malformed own code', () => {
    expect(() =>
      loadConfig({
        ...env,
        WORKER_RETRY_POLICY: 'LEDGER_RATE_LIMITED=30:3600',
        WORKER_HANDLER_FAILURE_CODES: 'BAD CODE',
      }),
    ).toThrow(
      'Invalid worker configuration:\n- WORKER_HANDLER_FAILURE_CODES lists "BAD CODE", which is not a failure code: a code is 1–100 characters without spaces, commas, "=" or ":"; write it as your handler throws it\n- WORKER_RETRY_POLICY names an unknown failure code "LEDGER_RATE_LIMITED"',
    );
  });
});

describe('Function: retryVisibility()', () => {
  const backoff = { baseSeconds: 2, maxSeconds: 900 };
  const retryPolicy = { THROTTLED: { baseSeconds: 10, maxSeconds: 40 } };
  const top = () => 0.9999999;

  it('takes the code policy curve, the default curve for other codes', () => {
    const settings = { backoff, retryPolicy, random: top };
    expect([1, 2, 3, 4].map((count) => retryVisibility({ code: 'THROTTLED' }, count, settings))).toEqual([
      { seconds: 10, source: 'policy' },
      { seconds: 20, source: 'policy' },
      { seconds: 40, source: 'policy' },
      { seconds: 40, source: 'policy' },
    ]);
    expect(retryVisibility({ code: 'LOCK_TIMEOUT' }, 3, settings)).toEqual({ seconds: 8, source: 'default' });
    // A name of Object.prototype is no code of the policy.
    expect(retryVisibility({ code: 'constructor' }, 1, settings)).toEqual({ seconds: 2, source: 'default' });
  });

  it("takes the handler's delay, rounded up and capped by the code's max and SQS's", () => {
    const settings = { backoff, retryPolicy, random: top };
    expect(retryVisibility({ code: 'THROTTLED', retryAfterSeconds: 12.2 }, 1, settings)).toEqual({
      seconds: 13,
      source: 'handler',
    });
    expect(retryVisibility({ code: 'THROTTLED', retryAfterSeconds: 3600 }, 1, settings).seconds).toBe(40);
    expect(retryVisibility({ code: 'OTHER', retryAfterSeconds: 3600 }, 1, settings).seconds).toBe(900);
    const wide = { backoff: { baseSeconds: 1, maxSeconds: 42_300 }, retryPolicy: {}, random: top };
    expect(retryVisibility({ code: 'OTHER', retryAfterSeconds: 1e9 }, 1, wide).seconds).toBe(42_300);
  });

  it('stays within 0 and the cap for any request and receive count', () => {
    fc.assert(
      fc.property(
        fc.option(fc.double({ noNaN: false }), { nil: undefined }),
        fc.integer({ min: 1, max: 1000 }),
        fc.double({ min: 0, max: 0.9999999, noNaN: true }),
        (retryAfterSeconds, count, r) => {
          const { seconds } = retryVisibility({ code: 'THROTTLED', retryAfterSeconds }, count, {
            backoff,
            retryPolicy,
            random: () => r,
          });
          expect(Number.isInteger(seconds)).toBe(true);
          expect(seconds).toBeGreaterThanOrEqual(0);
          expect(seconds).toBeLessThanOrEqual(40);
        },
      ),
    );
  });
});

describe('Function: applyAttemptPolicy() with a code retry policy', () => {
  const failure = { retryable: true, code: 'THROTTLED', message: 'throttled', connection: false };
  const defaults = {
    maxBusinessAttempts: 10,
    retryPolicy: { THROTTLED: { baseSeconds: 1, maxSeconds: 2, maxAttempts: 3 } },
  };
  const now = new Date('2026-01-01T00:00:00Z');

  it("turns terminal at the code's maxAttempts, naming the rule", () => {
    expect(applyAttemptPolicy(failure, { policy: undefined, attempts: 2, now, defaults }).retryable).toBe(
      true,
    );
    expect(applyAttemptPolicy(failure, { policy: undefined, attempts: 3, now, defaults })).toEqual({
      ...failure,
      retryable: false,
      message: 'throttled [terminal: attempt 3 of maxAttempts 3 of the retry policy of THROTTLED]',
    });
  });

  it("lets the envelope's maxBusinessAttempts win, and other codes keep the worker's", () => {
    expect(
      applyAttemptPolicy(failure, { policy: { maxBusinessAttempts: 5 }, attempts: 4, now, defaults })
        .retryable,
    ).toBe(true);
    const other = { ...failure, code: 'LOCK_TIMEOUT' };
    expect(applyAttemptPolicy(other, { policy: undefined, attempts: 9, now, defaults }).retryable).toBe(true);
  });
});

describe('Class: RetryableError retryAfterSeconds', () => {
  it('keeps a finite delay ≥ 0 through classification, drops anything else', () => {
    expect(classifyError(new RetryableError('X', 'x', { retryAfterSeconds: 30 })).retryAfterSeconds).toBe(30);
    expect(new RetryableError('X', 'x', { retryAfterSeconds: 0 }).retryAfterSeconds).toBe(0);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(new RetryableError('X', 'x', { retryAfterSeconds: bad }).retryAfterSeconds).toBeUndefined();
    }
    expect('retryAfterSeconds' in classifyError(new RetryableError('X', 'x'))).toBe(false);
  });
});
