import { createServer, Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { delayedPipe } from './delayed-pipe.ts';
import { SqsCallCounter } from './sqs-call-counter.ts';

// The SQS side's delaying proxy, on its own thread like the database's (`proxy-thread.ts`): every chunk waits
// `delayMs` per direction, and the calls each connection sends are counted by action. Protocol: the parent sends
// 'count'; the thread answers with the calls by action over every connection so far.
const target = workerData as { host: string; port: number; delayMs: number };
const counters = new Set<SqsCallCounter>();
const closed = new Map<string, number>();
const add = (into: Map<string, number>, calls: ReadonlyMap<string, number>) => {
  for (const [action, count] of calls) into.set(action, (into.get(action) ?? 0) + count);
};

const server = createServer((client) => {
  client.setNoDelay(true);
  const counter = new SqsCallCounter();
  counters.add(counter);
  const upstream = new Socket();
  upstream.setNoDelay(true);
  const cleanup = () => {
    if (counters.delete(counter)) add(closed, counter.calls);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cleanup).on('close', cleanup);
  upstream.on('error', cleanup).on('close', cleanup);
  client.pause();
  const toServer = delayedPipe(target.delayMs, (chunk) => {
    if (!upstream.destroyed) upstream.write(chunk);
  });
  const toClient = delayedPipe(target.delayMs, (chunk) => {
    if (!client.destroyed) client.write(chunk);
  });
  upstream.connect(target.port, target.host, () => {
    client.on('data', (chunk) => {
      counter.feed(chunk);
      toServer(chunk);
    });
    upstream.on('data', toClient);
    client.resume();
  });
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  parentPort?.postMessage({ port: typeof address === 'object' && address ? address.port : 0 });
});

parentPort?.on('message', (message: string) => {
  if (message === 'count') {
    const calls = new Map(closed);
    for (const counter of counters) add(calls, counter.calls);
    parentPort?.postMessage({ calls: Object.fromEntries(calls) });
  } else if (message === 'close') {
    server.close();
    parentPort?.close();
  }
});
