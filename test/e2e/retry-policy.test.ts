import { describe, expect, it } from 'vitest';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { expectDelay, failOnce, partnerCallHandler, scenarioWorker } from './retry-policy-scenario.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const db = await createTestDatabase();
const fixture = await localQueueFixture();

const partnerCall = defineHandler(partnerCallHandler);

const worker = scenarioWorker(fixture, { handlers: [partnerCall], sql: db.sql });

const inboxRow = async (key: string) =>
  (
    await db.sql`select status, failure_code, receive_count from worker_inbox where idempotency_key = ${key}`
  )[0];

describe('Retry policy per failure code through the engine (PostgreSQL, local SQS)', () => {
  it("sets the visibility of its code's policy, not the default curve", async () => {
    // Act: PARTNER_DOWN=3:3 (the default curve is 1 s).
    const delivery = await failOnce(fixture, worker, { code: 'PARTNER_DOWN' });

    // Assess
    expectDelay(delivery, 3, 'policy');
    expect(await inboxRow(delivery.idempotencyKey)).toEqual({
      status: 'FAILED_RETRYABLE',
      failure_code: 'PARTNER_DOWN',
      receive_count: 1,
    });
  });

  it('keeps the default curve for a code without a policy', async () => {
    const delivery = await failOnce(fixture, worker, { code: 'PARTNER_TIMEOUT' });
    expectDelay(delivery, 1, 'default');
  });

  it("sets the delay the handler's RetryableError asked for (Retry-After), capped by the code's max", async () => {
    // Act: PARTNER_RATE_LIMITED=1:6; the partner asks 4 s, then an HTTP-date an hour away.
    const asked = await failOnce(fixture, worker, { code: 'PARTNER_RATE_LIMITED', retryAfter: '4' });
    const capped = await failOnce(fixture, worker, {
      code: 'PARTNER_RATE_LIMITED',
      retryAfter: new Date(Date.now() + 3_600_000).toUTCString(),
    });

    // Assess
    expectDelay(asked, 4, 'handler');
    expectDelay(capped, 6, 'handler');
    expect(await inboxRow(asked.idempotencyKey)).toMatchObject({ failure_code: 'PARTNER_RATE_LIMITED' });
  });
});
