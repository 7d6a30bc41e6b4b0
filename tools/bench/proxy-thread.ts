import { createServer, Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { BurstCounter } from './burst-counter.ts';

// The counting proxy runs on its own thread so that forwarding bytes does not compete with the measured
// clients for the main event loop. Protocol: the parent sends 'count'; the thread answers with the total of
// round trips over every connection so far.
const target = workerData as { host: string; port: number };
const counters = new Set<BurstCounter>();
let closedBursts = 0;

const server = createServer((client) => {
  client.setNoDelay(true);
  const counter = new BurstCounter();
  counters.add(counter);
  const upstream = new Socket();
  upstream.setNoDelay(true);
  const cleanup = () => {
    if (counters.delete(counter)) closedBursts += counter.bursts;
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cleanup).on('close', cleanup);
  upstream.on('error', cleanup).on('close', cleanup);
  client.pause();
  upstream.connect(target.port, target.host, () => {
    client.on('data', (chunk) => {
      counter.client();
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      counter.server();
      client.write(chunk);
    });
    client.resume();
  });
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  parentPort?.postMessage({ port: typeof address === 'object' && address ? address.port : 0 });
});

parentPort?.on('message', (message: string) => {
  if (message === 'count') {
    let total = closedBursts;
    for (const counter of counters) total += counter.bursts;
    parentPort?.postMessage({ bursts: total });
  } else if (message === 'close') {
    server.close();
    for (const counter of counters) closedBursts += counter.bursts;
    parentPort?.close();
  }
});
