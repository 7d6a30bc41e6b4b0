import { createServer, Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { BurstCounter } from './burst-counter.ts';
import { delayedPipe } from './delayed-pipe.ts';
import { type SeenStatement, StatementCounter } from './statement-counter.ts';

// The counting proxy runs on its own thread so that forwarding bytes does not compete with the measured
// clients for the main event loop. Protocol: the parent sends 'count'; the thread answers with the totals of
// round trips and statements over every connection so far. 'statements' answers the distinct statements seen
// since the last 'statements' (text, size, prepared-statement name), and forgets them.
const target = workerData as { host: string; port: number; delayMs: number };
const counters = new Set<{ bursts: BurstCounter; statements: StatementCounter }>();
let closedBursts = 0;
let closedStatements = 0;
const seen = new Map<string, SeenStatement>();
const remember = (statement: SeenStatement) => {
  const key = `${statement.name}\u0000${statement.text}`;
  if (!seen.has(key)) seen.set(key, statement);
};

const server = createServer((client) => {
  client.setNoDelay(true);
  const counter = { bursts: new BurstCounter(), statements: new StatementCounter(remember) };
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
  // Each direction waits `delayMs` (0: none), as on a network path between the client and the database.
  const toServer = delayedPipe(target.delayMs, (chunk) => {
    if (!upstream.destroyed) upstream.write(chunk);
  });
  const toClient = delayedPipe(target.delayMs, (chunk) => {
    if (!client.destroyed) client.write(chunk);
  });
  upstream.connect(target.port, target.host, () => {
    // Counted as the bytes leave their sender: the order of bursts is the order on the wire.
    client.on('data', (chunk) => {
      counter.bursts.client();
      counter.statements.feed(chunk);
      toServer(chunk);
    });
    upstream.on('data', (chunk) => {
      counter.bursts.server();
      toClient(chunk);
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
  } else if (message === 'statements') {
    parentPort?.postMessage({ seen: [...seen.values()] });
    seen.clear();
  } else if (message === 'close') {
    server.close();
    for (const counter of counters) closedBursts += counter.bursts.bursts;
    parentPort?.close();
  }
});
