import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';

/**
 * TLS options for postgres.js (`ssl`) that verify the server: its certificate must chain to a trusted CA and
 * name `host`. postgres.js's `ssl: 'require'` encrypts but accepts any certificate (`rejectUnauthorized: false`),
 * so a machine in the path could present its own and read the password or IAM token sent next.
 *
 * Trusted CAs are Node's defaults plus `NODE_EXTRA_CA_CERTS` (read once at process start), or `ca` alone when
 * given (it REPLACES the defaults for this connection):
 * - through RDS Proxy: its certificate is issued by AWS Certificate Manager and chains to Amazon's public roots,
 *   which Node's defaults hold. Nothing to add.
 * - directly to an RDS instance: its certificate is issued by the RDS CA, which is not in Node's defaults. In the
 *   Lambda Node.js runtime (20 and later) set `NODE_EXTRA_CA_CERTS=/var/runtime/ca-cert.pem` (the runtime's file
 *   of Amazon CAs, RDS included); in a container image, copy the RDS bundle (`global-bundle.pem` from
 *   `https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem`) into the image and point
 *   `NODE_EXTRA_CA_CERTS` at it.
 *
 * The host name is checked against the certificate's names (`servername` for SNI when `host` is a name; an IP
 * address must then be among the certificate's IP names).
 *
 * @example
 * ```ts
 * const sql = postgres({ host, port, username, password, ssl: verifiedTls(host) });
 * ```
 */
export function verifiedTls(host: string, ca?: string): ConnectionOptions {
  return {
    rejectUnauthorized: true,
    // The name to check, stated rather than left to what the socket postgres.js hands to TLS remembers.
    host,
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(ca === undefined ? {} : { ca }),
  };
}
