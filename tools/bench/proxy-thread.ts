import { createServer, Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { BurstCounter } from './burst-counter.ts';
import { StatementCounter } from './statement-counter.ts';

// The counting proxy runs on its own thread so that forwarding bytes does not compete with the measured
// clients for the main event loop. Protocol: the parent sends 'count'; the thread answers with the totals of
// round trips and statements over every connection so far.
const target = workerData as { host: string; port: number };
const counters = new Set<{ bursts: BurstCounter; statements: StatementCounter }>();
let closedBursts = 0;
let closedStatements = 0;

const server = createServer((client) => {
  client.setNoDelay(true);
  const counter = { bursts: new BurstCounter(), statements: new StatementCounter() };
  counters.add(counter);
  const upstream = new Socket();
  upstream.setNoDelay(true);
  const cleanup = () => {
    if (counters.delete(counter)) {
      closedBursts += counter.bursts.bursts;
      closedStatements += counter.statements.statements;
    }
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cleanup).on('close', cleanup);
  upstream.on('error', cleanup).on('close', cleanup);
  client.pause();
  upstream.connect(target.port, target.host, () => {
    client.on('data', (chunk) => {
      counter.bursts.client();
      counter.statements.feed(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      counter.bursts.server();
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
    let bursts = closedBursts;
    let statements = closedStatements;
    for (const counter of counters) {
      bursts += counter.bursts.bursts;
      statements += counter.statements.statements;
    }
    parentPort?.postMessage({ bursts, statements });
  } else if (message === 'close') {
    server.close();
    for (const counter of counters) closedBursts += counter.bursts.bursts;
    parentPort?.close();
  }
});
