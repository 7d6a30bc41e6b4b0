import { afterEach, describe, expect, it } from 'vitest';
import { createSql } from '../../lambda/postgres/db.ts';

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

describe('Function: createSql', () => {
  it('signs an RDS IAM token as the password of each new connection (the signer is imported on first use)', async () => {
    // Prepare: static credentials, as Lambda provides them in its environment.
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' });
    const sql = createSql(
      {
        kind: 'host',
        host: 'proxy.example.internal',
        port: 5432,
        database: 'cases',
        user: 'sqs_worker',
        auth: 'iam',
        region: 'eu-west-1',
        ssl: true,
        poolSize: 1,
      },
      { applicationName: 'db-test' },
    );
    const password = (sql.options as unknown as { pass: () => Promise<string> }).pass;

    // Act
    const token = await password();
    const again = await password();

    // Assess: a presigned `connect` request for this host, user and region (no network involved).
    const url = new URL(`https://${token}`);
    expect(url.host).toBe('proxy.example.internal:5432');
    expect(url.searchParams.get('Action')).toBe('connect');
    expect(url.searchParams.get('DBUser')).toBe('sqs_worker');
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(
      /^AKIDEXAMPLE\/\d{8}\/eu-west-1\/rds-db\/aws4_request$/,
    );
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(new URL(`https://${again}`).host).toBe('proxy.example.internal:5432');
    await sql.end();
  });

  it('uses the configured password without signing when auth is password', () => {
    const sql = createSql({
      kind: 'host',
      host: 'db.example.internal',
      port: 5432,
      database: 'cases',
      user: 'sqs_worker',
      auth: 'password',
      password: 'from-secret',
      region: 'eu-west-1',
      ssl: false,
      poolSize: 1,
    });

    expect((sql.options as unknown as { pass: unknown }).pass).toBe('from-secret');
  });
});

describe('Function: createSql — prepared statements', () => {
  it('sends unnamed statements by default and named prepared statements with prepare (DB_PREPARE=true)', async () => {
    // Act
    const deployed = createSql({ kind: 'url', url: 'postgres://localhost/db', poolSize: 1 });
    const direct = createSql({ kind: 'url', url: 'postgres://localhost/db', poolSize: 1, prepare: true });

    // Assess
    expect(deployed.options.prepare).toBe(false);
    expect(direct.options.prepare).toBe(true);
    await Promise.all([deployed.end(), direct.end()]);
  });
});
