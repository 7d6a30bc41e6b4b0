import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { reconnectBackoff, reconnectDelayMs } from '../../lambda/postgres/reconnect-backoff.ts';

/** A loopback TCP server that closes every connection at once (`close`) or keeps it open (`keep`). */
async function tcpServer(mode: 'close' | 'keep'): Promise<{ port: number; server: Server }> {
  const kept: Socket[] = [];
  const server = createServer((socket) => {
    if (mode === 'close') socket.destroy();
    else kept.push(socket);
  });
  server.on('close', () => {
    for (const socket of kept) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, server };
}

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A factory with a hand-moved clock that records the waits it asks for instead of waiting. */
function recordingFactory() {
  const clock = { ms: 1_000_000 };
  const waits: number[] = [];
  const open = reconnectBackoff({
    now: () => clock.ms,
    random: () => 0.5, // no jitter: the wait is the nominal one
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  return { clock, waits, open };
}

/** Opens a socket through `open` and waits until the server's close reaches it. */
async function openAndLoseSocket(open: ReturnType<typeof reconnectBackoff>, port: number): Promise<Socket> {
  const socket = await open({ host: ['127.0.0.1'], port: [port] });
  sockets.push(socket);
  socket.on('error', () => {});
  await once(socket, 'close');
  return socket;
}

describe('Function: reconnectDelayMs', () => {
  it('waits nothing after a healthy connection, then 50 ms doubling to at most 2 s', () => {
    const nominal = (failures: number) => reconnectDelayMs(failures, {}, () => 0.5);

    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 60].map(nominal)).toEqual([
      0, 50, 100, 200, 400, 800, 1600, 2000, 2000, 2000,
    ]);
  });

  it('spreads each wait by ±25 % and honours other bounds', () => {
    expect(reconnectDelayMs(3, {}, () => 0)).toBe(150);
    expect(reconnectDelayMs(3, {}, () => 0.999_999)).toBe(250);
    expect(reconnectDelayMs(2, { baseMs: 10, maxMs: 15 }, () => 0.5)).toBe(15);
  });
});

describe('Function: reconnectBackoff', () => {
  it('spaces out attempts whose connections are closed at once, and forgets them after a healthy one', async () => {
    // Prepare: a server that turns every connection away, and one that keeps them.
    const refusing = await tcpServer('close');
    const keeping = await tcpServer('keep');
    servers.push(refusing.server, keeping.server);
    const { clock, waits, open } = recordingFactory();

    // Act: four attempts turned away at once, then one that lives 5 s, then one more turned away.
    for (let attempt = 0; attempt < 4; attempt += 1) await openAndLoseSocket(open, refusing.port);
    const healthy = await open({ host: ['127.0.0.1'], port: [keeping.port] });
    sockets.push(healthy);
    await once(healthy, 'connect');
    clock.ms += 5000;
    healthy.destroy();
    await once(healthy, 'close');
    await openAndLoseSocket(open, refusing.port);

    // Assess: no wait before the first attempt, 50 / 100 / 200 ms before the next three, 400 ms before the healthy
    // one (it followed a fourth quick failure); the healthy connection reset the count: the last attempt did not wait.
    expect(waits).toEqual([50, 100, 200, 400]);
  });

  it('does not wait while the previous connection is still open (a pool opening several)', async () => {
    const keeping = await tcpServer('keep');
    servers.push(keeping.server);
    const { waits, open } = recordingFactory();

    const first = await open({ host: ['127.0.0.1'], port: [keeping.port] });
    const second = await open({ host: ['127.0.0.1'], port: [keeping.port] });
    sockets.push(first, second);
    await Promise.all([once(first, 'connect'), once(second, 'connect')]);

    expect(waits).toEqual([]);
    expect([first.destroyed, second.destroyed]).toEqual([false, false]);
  });

  it('connects to the configured hosts in turn and names the server on the socket', async () => {
    const a = await tcpServer('keep');
    const b = await tcpServer('keep');
    servers.push(a.server, b.server);
    const { open } = recordingFactory();
    const target = { host: ['127.0.0.1', '127.0.0.1'], port: [a.port, b.port] };

    const opened = [await open(target), await open(target), await open(target)];
    sockets.push(...opened);
    await Promise.all(opened.map((socket) => once(socket, 'connect')));

    // postgres.js reads `host` and `port` off the socket for TLS (servername) and its connection errors.
    expect(opened.map((socket) => (socket as Socket & { port: number }).port)).toEqual([
      a.port,
      b.port,
      a.port,
    ]);
    expect(opened.map((socket) => socket.remotePort)).toEqual([a.port, b.port, a.port]);
    expect((opened[0] as Socket & { host: string }).host).toBe('127.0.0.1');
  });
});
