import { once } from 'node:events';
import { createServer, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { generate } from 'selfsigned';

/** A loopback proxy that speaks PostgreSQL's TLS negotiation to clients and plain TCP to the server. */
export interface TlsTerminatingProxy {
  /** Port to connect to instead of the database's. */
  readonly port: number;
  /** The TLS protocol of every client connection that completed its handshake, in order (`TLSv1.3`, …). */
  readonly handshakes: readonly string[];
  close(): Promise<void>;
}

/** PostgreSQL's SSLRequest: length 8, then the code 80877103. */
const SSL_REQUEST_CODE = 80877103;

/**
 * Starts a proxy in front of the plain-TCP PostgreSQL at `target` that requires TLS from its clients, the way RDS
 * Proxy does: it reads the client's SSLRequest, answers `S`, completes a TLS handshake with a self-signed
 * certificate made for the run (`selfsigned`), and forwards the decrypted stream. A client that does not ask for
 * TLS is disconnected.
 */
export async function startTlsTerminatingProxy(target: {
  host: string;
  port: number;
}): Promise<TlsTerminatingProxy> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec' });
  const handshakes: string[] = [];
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
    await once(secure, 'secure');
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
      secure.pipe(upstream);
      upstream.pipe(secure);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    handshakes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
