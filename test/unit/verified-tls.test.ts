import { describe, expect, it } from 'vitest';
import { verifiedTls } from '../../lambda/postgres/verified-tls.ts';

describe('Function: verifiedTls()', () => {
  it('rejects unauthorized certificates and checks the host name it is given (SNI for a name)', () => {
    expect(verifiedTls('proxy.example.internal')).toEqual({
      rejectUnauthorized: true,
      host: 'proxy.example.internal',
      servername: 'proxy.example.internal',
    });
  });

  it('sends no SNI for an IP address but still checks it, and trusts only `ca` when given', () => {
    expect(verifiedTls('10.0.0.7', 'PEM')).toEqual({ rejectUnauthorized: true, host: '10.0.0.7', ca: 'PEM' });
  });
});
