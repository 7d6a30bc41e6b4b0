import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';

const db = await createTestDatabase();

describe('Function: createDatabaseProbe()', () => {
  const target = new URL(db.url);
  let connects = 0;

  it('fails while the database is down or stalled, and succeeds again once it answers, on a fresh client', async () => {
    // Prepare
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const viaProxy = new URL(db.url);
    viaProxy.port = String(proxy.port);
    const probe = createDatabaseProbe(() => {
      connects += 1;
      return postgres(viaProxy.toString(), { max: 1, connect_timeout: 1, onnotice: () => {} });
    }, 500);
    const results: string[] = [];

    // Act
    try {
      results.push(await probe().then(() => 'ok'));
      proxy.stall(); // connected, but nothing is forwarded: the query waits forever
      results.push(
        await probe().then(
          () => 'ok',
          (error: Error) => error.message,
        ),
      );
      proxy.down();
      results.push(
        await probe().then(
          () => 'ok',
          () => 'failed',
        ),
      );
      proxy.up();
      results.push(await probe().then(() => 'ok'));
    } finally {
      await probe.close();
      await proxy.close();
    }
    const [healthy, stalled, down, back] = results;

    // Assess
    expect(healthy).toBe('ok');
    expect(stalled).toBe('the database did not answer a probe within 500 ms');
    expect(down).toBe('failed');
    expect(back).toBe('ok');
    expect(connects).toBeGreaterThanOrEqual(2); // the stalled client was thrown away
  });
});
