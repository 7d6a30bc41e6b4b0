import { TOOLKIT_FAILURE_CODES } from './toolkit-failure-codes.ts';
import { ENVELOPE_LIMITS } from './worker/envelope.ts';
import { type CodeRetryPolicy, type RetryPolicy, retryPolicyProblems } from './worker/retry-policy.ts';

// The text form of a retry policy (`WORKER_RETRY_POLICY`): `CODE=base:max[:attempts]` entries, comma-separated,
// seconds and attempts as whole numbers — `THROTTLED=5:300,PARTNER_RATE_LIMITED=30:3600:20`. Read by lambda/config.ts,
// written (and checked at synth) by the construct's `retryPolicy`.

/** The toolkit's own codes, and `POSTGRES_<sqlstate>` for an SQLSTATE the PostgreSQL store does not name. */
const TOOLKIT_CODES: ReadonlySet<string> = new Set(TOOLKIT_FAILURE_CODES);
const POSTGRES_CODE = /^POSTGRES_[0-9A-Z]{5}$/;
/** What a code may be written as in the text form: no separator of it, no space. */
const CODE_TEXT = /^[^\s,=:]+$/;
const ENTRY = /^([^=]*)=([^=]*)$/;
const NUMBER = /^-?\d+(?:\.\d+)?$/;

/** A retry policy read from its text form, and every problem found in it (`policy` holds the valid entries). */
export interface ParsedRetryPolicy {
  readonly policy: RetryPolicy;
  readonly problems: readonly string[];
}

/**
 * The problems of a list of a worker's own failure codes (`WORKER_HANDLER_FAILURE_CODES`): each 1–100 characters
 * without spaces, commas, `=` or `:`.
 *
 * @internal
 */
export function ownCodeProblems(codes: readonly string[], where: string): string[] {
  return codes
    .filter((code) => !CODE_TEXT.test(code) || Array.from(code).length > ENVELOPE_LIMITS.failureCode)
    .map(
      (code) =>
        `${where} lists "${code}", which is not a failure code: a code is 1–${ENVELOPE_LIMITS.failureCode} characters without spaces, commas, "=" or ":"; write it as your handler throws it`,
    );
}

/** Whether a retry policy may name `code`: a toolkit code, a `POSTGRES_<sqlstate>` one, or one of `ownCodes`. */
function knownCode(code: string, ownCodes: ReadonlySet<string>): boolean {
  return TOOLKIT_CODES.has(code) || POSTGRES_CODE.test(code) || ownCodes.has(code);
}

/** One `CODE=base:max[:attempts]` entry, or the problem with it. */
function parseEntry(
  entry: string,
  context: { readonly where: string; readonly ownCodes: ReadonlySet<string>; readonly ownList: string },
): { code: string; policy: CodeRetryPolicy } | { problem: string } {
  const { where } = context;
  const form = `write it as CODE=base:max or CODE=base:max:attempts (seconds, whole numbers), e.g. THROTTLED=5:300`;
  const match = ENTRY.exec(entry);
  const code = match?.[1]?.trim() ?? '';
  const numbers = (match?.[2] ?? '').split(':').map((part) => part.trim());
  if (!match || !CODE_TEXT.test(code) || numbers.length < 2 || numbers.length > 3) {
    return { problem: `${where} has an entry "${entry}" that is not CODE=base:max[:attempts]; ${form}` };
  }
  if (!knownCode(code, context.ownCodes)) {
    return {
      problem: `${where} names an unknown failure code "${code}" (entry "${entry}"): use a toolkit code (docs/semantics.md lists them), POSTGRES_<sqlstate>, or, for your handlers' own code (the example domain's too), list it in ${context.ownList}`,
    };
  }
  const bad = numbers.find((part) => !NUMBER.test(part));
  if (bad !== undefined) {
    return { problem: `${where} ${code}: "${bad}" is not a number (entry "${entry}"); ${form}` };
  }
  const [baseSeconds, maxSeconds, maxAttempts] = numbers.map(Number) as [number, number, number | undefined];
  return {
    code,
    policy:
      maxAttempts === undefined ? { baseSeconds, maxSeconds } : { baseSeconds, maxSeconds, maxAttempts },
  };
}

/**
 * Reads a retry policy from its text form (`CODE=base:max[:attempts]`, comma-separated; empty or unset: none) and
 * checks it strictly: an entry not of that form, a code named twice, a code that is neither the toolkit's
 * (`FAILURE_CODES`, `POSTGRES_<sqlstate>`) nor one of `ownCodes`, and numbers out of their ranges
 * (`retryPolicyProblems`: whole seconds 0–42,300, max ≥ base, attempts 1–1000) are each a problem naming the value
 * and the fix.
 *
 * @param where the setting's name, for the messages (`WORKER_RETRY_POLICY`).
 * @param own the worker's own failure codes the policy may name, and the setting they come from.
 *
 * @internal
 */
export function parseRetryPolicy(
  text: string | undefined,
  where: string,
  own: { readonly codes: readonly string[]; readonly setting: string },
): ParsedRetryPolicy {
  // A Map, then Object.fromEntries: own properties whatever the code is called (`__proto__` included).
  const policy = new Map<string, CodeRetryPolicy>();
  const seen = new Set<string>();
  const problems: string[] = [];
  const entries = (text ?? '').split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') return { policy: {}, problems };
  const context = { where, ownCodes: new Set(own.codes), ownList: own.setting };
  for (const entry of entries) {
    const parsed = parseEntry(entry, context);
    if ('problem' in parsed) {
      problems.push(parsed.problem);
    } else if (seen.has(parsed.code)) {
      problems.push(`${where} names ${parsed.code} twice; keep one entry for it`);
    } else {
      seen.add(parsed.code);
      const entryProblems = retryPolicyProblems(Object.fromEntries([[parsed.code, parsed.policy]]), where);
      problems.push(...entryProblems);
      if (entryProblems.length === 0) policy.set(parsed.code, parsed.policy);
    }
  }
  return { policy: Object.fromEntries(policy), problems };
}

/**
 * The text form of a retry policy, as {@link parseRetryPolicy} reads it: `CODE=base:max[:attempts]`, comma-separated.
 *
 * @internal
 */
export function formatRetryPolicy(policy: RetryPolicy): string {
  return Object.entries(policy)
    .map(([code, { baseSeconds, maxSeconds, maxAttempts }]) =>
      [`${code}=${baseSeconds}`, maxSeconds, ...(maxAttempts === undefined ? [] : [maxAttempts])].join(':'),
    )
    .join(',');
}
