/** A `DATABASE_URL` that {@link parseDatabaseUrl} accepted. */
export interface DatabaseUrl {
  /** `host:port` of the server (the port defaults to 5432); several hosts are listed as given. */
  readonly address: string;
  /** The database name from the path. */
  readonly database: string;
}

const EXAMPLE = 'postgres://user:password@host:5432/database';

/**
 * Hides the password of a connection URL (`postgres://user:***@host/db`), also in a value that is not a valid
 * URL, so that an error can quote the value given. The userinfo ends at the last `@`: a password with an
 * unescaped `@` or `/` is still hidden whole. A `password=` query parameter is hidden too.
 */
export function maskDatabaseUrl(value: string): string {
  const scheme = value.indexOf('://');
  const start = scheme === -1 ? 0 : scheme + 3;
  const at = value.lastIndexOf('@');
  const colon = value.indexOf(':', start);
  const masked =
    at > start && colon !== -1 && colon < at ? `${value.slice(0, colon + 1)}***${value.slice(at)}` : value;
  return masked.replace(/([?&]password=)[^&#]*/gi, '$1***');
}

/**
 * Checks a PostgreSQL connection URL the way postgres.js will read it: scheme `postgres://` or `postgresql://`,
 * a host, a database name. `name` is the setting it came from (`DATABASE_URL`, `--database-url`), named in the
 * problem along with the value given, its password masked.
 *
 * @returns the server's address and database, or the problem to report.
 * @example
 * ```ts
 * const checked = parseDatabaseUrl(process.env.DATABASE_URL ?? '', 'DATABASE_URL');
 * if ('problem' in checked) throw new ConfigError(checked.problem);
 * ```
 */
export function parseDatabaseUrl(value: string, name: string): DatabaseUrl | { readonly problem: string } {
  const problem = (what: string) => ({
    problem: `${name} must be a PostgreSQL connection URL such as ${EXAMPLE} (given "${maskDatabaseUrl(value)}"): ${what}`,
  });
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return problem('it does not start with postgres://');
  if (scheme !== 'postgres' && scheme !== 'postgresql')
    return problem(`the scheme must be postgres:// or postgresql://, not ${scheme}://`);
  // postgres.js accepts several hosts (`h1:5432,h2:5433`) and parses the URL with the first one in their place.
  const authority = value.slice(value.indexOf('://') + 3).split(/[/?#]/)[0] ?? '';
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  let url: URL;
  try {
    url = new URL(value.replace(hosts, hosts.split(',')[0] ?? ''));
  } catch {
    return problem('it is not a valid URL (a password with @, /, : or # must be percent-encoded)');
  }
  if (url.hostname === '') return problem('the host is missing');
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database === '') return problem('the database name is missing (…/database at the end)');
  // Not quoted: with an unescaped / in the password, the "path" holds the rest of the password.
  if (database.includes('/'))
    return problem(
      'the path must be one database name (a password with @, /, : or # must be percent-encoded)',
    );
  const address = hosts.includes(',') ? hosts : `${url.hostname}:${url.port || 5432}`;
  return { address, database };
}
