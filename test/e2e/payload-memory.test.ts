import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveWorkerSettings } from '../../lib/resolve-worker-settings.ts';
import { type PayloadMemoryRig, startPayloadMemoryRig } from '../../tools/bench/payload-memory-rig.ts';
import { createTestDatabase } from '../support/database.ts';

const db = await createTestDatabase();
let rig: PayloadMemoryRig;
beforeAll(async () => {
  rig = await startPayloadMemoryRig({ admin: db.sql, url: db.url });
});
afterAll(async () => {
  await rig?.close();
});

describe('Memory: a worker holding payloadRef objects at the limit the stack gives it', () => {
  it.each([1, 2])(
    'stays within the default 512 MB function with %i record(s) in flight of the densest JSON at that limit',
    async (recordsInFlight) => {
      // Prepare: the limit the stack derives for the default function with this many records at once.
      const settings = resolveWorkerSettings({ alarms: 'none', dbPoolSize: recordsInFlight });
      expect(settings.recordConcurrency).toBe(recordsInFlight);

      // Act: a real worker, bundled and started as Lambda starts a 512 MB function, reads, verifies, parses and
      // validates that many objects of the limit's size (arrays of small numbers) and handles them at once.
      const row = await rig.run({
        shape: 'numbers',
        bytes: settings.maxPayloadBytes,
        atOnce: recordsInFlight,
        memorySizeMb: settings.memorySize,
      });

      // Assess: every record completed, and the process's peak RSS stayed below the function's memory (where
      // Lambda ends an invocation as out of memory).
      expect(row.completed).toBe(recordsInFlight);
      expect(row.peakMiB).toBeLessThan(settings.memorySize);
    },
  );
});
