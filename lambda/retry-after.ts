const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

/** `Sun, 06 Nov 1994 08:49:37 GMT`: IMF-fixdate, the form senders use (RFC 9110 §5.6.7). */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT`: the obsolete RFC 850 form, which recipients still accept. */
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994`: C's asctime() form, in UTC, which recipients still accept. */
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/** Epoch milliseconds of a date's parts, or undefined when they name no such moment (31 Feb, 25:00). */
function utcMs(year: number, month: string, day: number, time: readonly string[]): number | undefined {
  const [hour, minute, second] = time.map(Number) as [number, number, number];
  const monthIndex = MONTHS.indexOf(month);
  const ms = Date.UTC(year, monthIndex, day, hour, minute, second);
  const back = new Date(ms);
  // Date.UTC rolls an out-of-range part over (31 Feb → 3 Mar): such a date is refused, not moved.
  const exact =
    back.getUTCFullYear() === year &&
    back.getUTCMonth() === monthIndex &&
    back.getUTCDate() === day &&
    back.getUTCHours() === hour &&
    back.getUTCMinutes() === minute &&
    back.getUTCSeconds() === second;
  return exact ? ms : undefined;
}

/** Epoch milliseconds of an HTTP-date in any of its three forms, or undefined. */
function httpDateMs(text: string, nowMs: number): number | undefined {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) return utcMs(Number(imf[3]), imf[2] as string, Number(imf[1]), imf.slice(4));
  const rfc850 = RFC_850.exec(text);
  if (rfc850) {
    // A two-digit year more than 50 years ahead is the past century's (RFC 9110 §5.6.7).
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(rfc850[3]);
    if (year > nowYear + 50) year -= 100;
    return utcMs(year, rfc850[2] as string, Number(rfc850[1]), rfc850.slice(4));
  }
  const asctime = ASCTIME.exec(text);
  if (asctime) {
    return utcMs(Number(asctime[6]), asctime[1] as string, Number(asctime[2]), asctime.slice(3, 6));
  }
  return undefined;
}

/**
 * The delay an HTTP `Retry-After` header value asks for, in whole seconds from `now`, for a handler's
 * `RetryableError` (`retryAfterSeconds`): delay-seconds (`120`) as given, an HTTP-date (`Wed, 21 Oct 2015 07:28:00
 * GMT`, or its obsolete RFC 850 and asctime forms) as the seconds from `now` to it, rounded up, 0 when it has
 * passed. Anything else — absent, empty, negative, fractional, a malformed or impossible date — is undefined, so the
 * error falls back to its code's backoff. The engine caps the delay (the code's `maxSeconds`, SQS's 12 hours).
 *
 * @param value the header's value as received (`response.headers.get('retry-after')`), surrounding spaces allowed.
 * @param now the clock to measure a date from: epoch milliseconds or a Date.
 *
 * @example
 * ```ts
 * const response = await fetch(url);
 * if (response.status === 429 || response.status === 503) {
 *   throw new RetryableError('PARTNER_RATE_LIMITED', `the partner API answered ${response.status}`, {
 *     retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after'), Date.now()),
 *   });
 * }
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, now: number | Date): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds : undefined;
  }
  const nowMs = typeof now === 'number' ? now : now.getTime();
  if (!Number.isFinite(nowMs)) return undefined;
  const at = httpDateMs(text, nowMs);
  return at === undefined ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}
