import { once } from 'node:events';
import { createServer, isIP, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { generate } from 'selfsigned';

/** A loopback proxy that speaks PostgreSQL's TLS negotiation to clients and plain TCP to the server. */
export interface TlsTerminatingProxy {
  /** Port to connect to instead of the database's. */
  readonly port: number;
  /** The TLS protocol of every client connection that completed its handshake, in order (`TLSv1.3`, …). */
  readonly handshakes: readonly string[];
  /**
   * Bytes the clients sent inside TLS (startup message, password, queries). A client that rejects the
   * certificate sends none: nothing, a password or an IAM token included, reaches a server it does not trust.
   */
  readonly clientBytes: number;
  /** PEM certificate of the CA that issued the proxy's certificate (made for the run): trust it to connect. */
  readonly caCertificate: string;
  close(): Promise<void>;
}

/** PostgreSQL's SSLRequest: length 8, then the code 80877103. */
const SSL_REQUEST_CODE = 80877103;

/**
 * Starts a proxy in front of the plain-TCP PostgreSQL at `target` that requires TLS from its clients, the way RDS
 * Proxy does: it reads the client's SSLRequest, answers `S`, completes a TLS handshake with a certificate for
 * `hostNames` issued by a CA made for the run (`selfsigned`; trusted by nobody unless given
 * {@link TlsTerminatingProxy.caCertificate}), and forwards the decrypted stream. A client that does not ask
 * for TLS is disconnected.
 */
export async function startTlsTerminatingProxy(
  target: { host: string; port: number },
  options: { hostNames?: readonly string[] } = {},
): Promise<TlsTerminatingProxy> {
  const hostNames = options.hostNames ?? ['localhost', '127.0.0.1'];
  const ca = await generate([{ name: 'commonName', value: 'sqs-inbox-worker test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const pems = await generate([{ name: 'commonName', value: hostNames[0] ?? 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: hostNames.map((name) => (isIP(name) ? { type: 7, ip: name } : { type: 2, value: name })),
      },
    ],
  });
  const handshakes: string[] = [];
  let clientBytes = 0;
  const sockets = new Set<Socket>();
  const server = createServer(async (client) => {
    sockets.add(client);
    client.on('error', () => {});
    client.on('close', () => sockets.delete(client));
    const [request] = (await once(client, 'data')) as [Buffer];
    if (request.length !== 8 || request.readInt32BE(4) !== SSL_REQUEST_CODE) {
      client.destroy();
      return;
    }
    client.write('S');
    const secure = new TLSSocket(client, { isServer: true, key: pems.private, cert: pems.cert });
    secure.on('error', () => {});
    try {
      await once(secure, 'secure');
    } catch {
      // The client gave up on the handshake (it did not trust the certificate): nothing to forward.
      client.destroy();
      return;
    }
    handshakes.push(secure.getProtocol() ?? 'unknown');
    const upstream = new Socket();
    sockets.add(upstream);
    upstream.on('error', () => secure.destroy());
    upstream.on('close', () => {
      sockets.delete(upstream);
      secure.destroy();
    });
    secure.on('close', () => upstream.destroy());
    upstream.connect(target.port, target.host, () => {
      // Counted from the moment the stream flows: until then `secure` buffers what the client sends.
      secure.on('data', (chunk: Buffer) => {
        clientBytes += chunk.length;
      });
      secure.pipe(upstream);
      upstream.pipe(secure);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    handshakes,
    get clientBytes() {
      return clientBytes;
    },
    caCertificate: ca.cert,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
