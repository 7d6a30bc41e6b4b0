import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The secrets of one console run: the token of its URL, and the CSRF token its forms carry. */
export interface ConsoleSecrets {
  /** In the printed URL; a request without it (in the URL or the run's cookie) is refused. */
  readonly token: string;
  /** In every form of the run; an action without it is refused. Derived from the token, so nothing else is kept. */
  readonly csrf: string;
}

/** New secrets for one run of the console (256 random bits), never written anywhere but the printed URL. */
export function createConsoleSecrets(token = randomBytes(32).toString('base64url')): ConsoleSecrets {
  return { token, csrf: createHmac('sha256', token).update('csrf').digest('base64url') };
}

/** Compares a presented secret with the expected one in constant time (undefined, or another length: false). */
export function sameSecret(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
