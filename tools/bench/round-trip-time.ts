import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { median } from './statistics.ts';

/** Median time of a parameterless statement through the proxy at `proxiedUrl` (one round trip), in ms. */
export async function roundTripTime(proxiedUrl: string): Promise<number> {
  const client = postgres(proxiedUrl, { max: 1, prepare: false, onnotice: () => {} });
  try {
    await client`select 1`;
    const times: number[] = [];
    for (let run = 0; run < 30; run += 1) {
      const t = performance.now();
      await client`select 1`;
      times.push(performance.now() - t);
    }
    return median(times);
  } finally {
    await client.end({ timeout: 5 });
  }
}
