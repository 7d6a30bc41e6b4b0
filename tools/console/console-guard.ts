import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleSecrets, sameSecret } from './console-secrets.ts';

/** Where the console listens, known once it does (the port may be chosen by the system). */
export interface ConsoleAddress {
  /** `http://host:port`, as printed; an action is accepted from this origin (or another name of it in `hosts`) only. */
  origin: string;
  /** The Host headers a request may carry (`127.0.0.1:port`, `localhost:port`, …): anything else is refused. */
  hosts: ReadonlySet<string>;
  /** The cookie that keeps the token after the first page (one per port: cookies do not tell ports apart). */
  cookie: string;
}

/** The refusal of a request, as a status and a sentence the operator can act on. */
export interface GuardRefusal {
  readonly status: number;
  readonly message: string;
}

/**
 * Installs the console's guards on every request, before any route runs:
 * - the Host header must be the console's own (a page of another site resolving its name to 127.0.0.1 — DNS
 *   rebinding — is refused);
 * - the run's token must be presented, in the URL (`?token=`, then kept in an HttpOnly, SameSite=Strict cookie and
 *   removed from the address bar by a redirect) or in that cookie;
 * - a request that changes anything (any method but GET and HEAD) must come from the console's own origin (`Origin`,
 *   or `Sec-Fetch-Site: same-origin` when a browser sends no Origin) and carry the run's CSRF token in its form
 *   (`csrf`), checked after the body is parsed;
 * - every response forbids framing and caching, sends no referrer to another site, and its content security policy
 *   allows no script.
 */
export function installConsoleGuard(
  app: FastifyInstance,
  secrets: ConsoleSecrets,
  address: () => ConsoleAddress,
  refuse: (reply: FastifyReply, refusal: GuardRefusal) => FastifyReply,
): void {
  app.addHook('onRequest', async (request, reply) => {
    setSecurityHeaders(reply);
    const where = address();
    const refusal = hostRefusal(request, where) ?? originRefusal(request, where);
    if (refusal) return refuse(reply, refusal);
    const query = request.query as Record<string, string | undefined>;
    if (sameSecret(query.token, secrets.token) && (request.method === 'GET' || request.method === 'HEAD')) {
      // The token moves to a cookie and out of the address bar (history, screenshots, a shared screen).
      const url = new URL(request.url, where.origin);
      url.searchParams.delete('token');
      reply.header('set-cookie', `${where.cookie}=${secrets.token}; HttpOnly; SameSite=Strict; Path=/`);
      return reply.redirect(`${url.pathname}${url.search}`, 303);
    }
    if (!sameSecret(readCookie(request, where.cookie), secrets.token)) {
      return refuse(reply, {
        status: 401,
        message:
          'This console needs the token of its run: open the URL "sqs-worker console" printed (it ends in ?token=…). ' +
          'A new run prints a new token.',
      });
    }
    return undefined;
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return undefined;
    const form = (request.body ?? {}) as Record<string, string | undefined>;
    if (!sameSecret(form.csrf, secrets.csrf)) {
      return refuse(reply, {
        status: 403,
        message:
          "The form did not carry this run's CSRF token: reload the page from the console and submit it again.",
      });
    }
    return undefined;
  });
}

function setSecurityHeaders(reply: FastifyReply): void {
  reply.header(
    'content-security-policy',
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  reply.header('x-frame-options', 'DENY');
  reply.header('x-content-type-options', 'nosniff');
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the console's own form posts.
  reply.header('referrer-policy', 'same-origin');
  reply.header('cache-control', 'no-store');
}

function hostRefusal(request: FastifyRequest, where: ConsoleAddress): GuardRefusal | undefined {
  const host = request.headers.host;
  if (host !== undefined && where.hosts.has(host.toLowerCase())) return undefined;
  return {
    status: 421,
    message: `This console answers on ${where.origin} only (the request named host "${host ?? ''}").`,
  };
}

function originRefusal(request: FastifyRequest, where: ConsoleAddress): GuardRefusal | undefined {
  if (request.method === 'GET' || request.method === 'HEAD') return undefined;
  const origin = request.headers.origin;
  const own =
    origin === undefined
      ? request.headers['sec-fetch-site'] === 'same-origin'
      : origin.startsWith('http://') && where.hosts.has(origin.slice('http://'.length).toLowerCase());
  if (own) return undefined;
  return {
    status: 403,
    message: `Actions are accepted from the console's own pages only (${where.origin}); this one came from ${origin ?? 'an unknown origin'}.`,
  };
}

function readCookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}
