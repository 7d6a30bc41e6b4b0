import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { DatabaseConfig } from '../../lambda/config.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTlsTerminatingProxy, type TlsTerminatingProxy } from '../support/tls-terminating-proxy.ts';

const db = await createTestDatabase();
const target = new URL(db.url);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A TLS-demanding proxy in front of the test database, its certificate issued for `hostNames`. */
async function tlsProxy(hostNames?: readonly string[]): Promise<TlsTerminatingProxy> {
  const proxy = await startTlsTerminatingProxy(
    { host: target.hostname, port: Number(target.port) },
    hostNames ? { hostNames } : {},
  );
  cleanups.push(() => proxy.close());
  return proxy;
}

/** Deployed-style settings (host, password, TLS on) for a connection through `proxy`. */
const through = (proxy: TlsTerminatingProxy, host: string) =>
  ({
    host,
    port: proxy.port,
    database: db.name,
    user: decodeURIComponent(target.username),
    password: decodeURIComponent(target.password),
  }) as const;

function connect(settings: ReturnType<typeof through>, ca?: string) {
  const config: DatabaseConfig = {
    kind: 'host',
    auth: 'password',
    region: 'eu-west-1',
    ssl: true,
    poolSize: 1,
    ...settings,
    ...(ca === undefined ? {} : { ca }),
  };
  const sql = createSql(config);
  cleanups.push(() => sql.end({ timeout: 0 }));
  return sql;
}

const codeOf = (error: unknown) => (error as { code?: string }).code;

describe('Function: createSql — TLS verifies the server', () => {
  it('refuses a server whose certificate no trusted CA issued, before sending anything', async () => {
    // Prepare: a certificate for the right name, from a CA this process does not trust.
    const proxy = await tlsProxy();
    const sql = connect(through(proxy, 'localhost'));

    // Act
    const outcome = await sql`select 1`.then(() => 'connected', codeOf);

    // Assess: the handshake happened, the client refused it, and not one byte (startup, password) followed.
    expect(outcome).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(proxy.clientBytes).toBe(0);
  });

  it('connects once the CA of that certificate is trusted', async () => {
    // Prepare
    const proxy = await tlsProxy();
    const sql = connect(through(proxy, 'localhost'), proxy.caCertificate);

    // Act
    const rows = await sql<{ database: string }[]>`select current_database() as database`;

    // Assess
    expect(rows).toEqual([{ database: db.name }]);
    expect(proxy.handshakes).toEqual(['TLSv1.3']);
    expect(proxy.clientBytes).toBeGreaterThan(0);
  });

  it('refuses a trusted certificate issued for another host name', async () => {
    // Prepare: the CA is trusted, but the certificate names db.example.test, not the host connected to.
    const proxy = await tlsProxy(['db.example.test']);
    const sql = connect(through(proxy, '127.0.0.1'), proxy.caCertificate);

    // Act
    const outcome = await sql`select 1`.then(() => 'connected', codeOf);

    // Assess
    expect(outcome).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(proxy.clientBytes).toBe(0);
  });

  it('trusts a CA added with NODE_EXTRA_CA_CERTS (how a function trusts the RDS CA), and only then', async () => {
    // Prepare: the CA in a file, and a child process that connects like a deployed function (no `ca`).
    const proxy = await tlsProxy();
    const caFile = join(tmpdir(), `sqs-worker-test-ca-${process.pid}-${proxy.port}.pem`);
    await writeFile(caFile, proxy.caCertificate);
    cleanups.push(() => rm(caFile, { force: true }));
    const script = join(import.meta.dirname, '../fixtures/verified-tls/connect.ts');
    const run = async (extraCa: Record<string, string>) => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
        env: { ...process.env, ...extraCa, TLS_TEST_TARGET: JSON.stringify(through(proxy, 'localhost')) },
        timeout: 30_000,
      });
      return JSON.parse(stdout) as unknown;
    };

    // Act
    const trusted = await run({ NODE_EXTRA_CA_CERTS: caFile });
    const untrusted = await run({});

    // Assess
    expect(trusted).toEqual({ rows: [{ database: db.name }] });
    expect(untrusted).toEqual({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
  });
});
