import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { LOCAL_ACCESS_KEY_IDS } from '../../tools/local/iam/local-identities.ts';
import { lambdaContext } from '../../tools/local/lambda-context.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const local = await localQueueFixture();
const { queueUrl } = await local.queues();

// The entry point reads its configuration once, at import (cold start); its SDK clients sign with the relay
// function's role's local key, as the deployed function signs with its role's credentials.
Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: LOCAL_ACCESS_KEY_IDS.relay,
  DATABASE_URL: db.roleUrl('relay'),
  OUTBOX_QUEUE_URL: queueUrl,
  OUTBOX_RUN_GUARD_MS: '1000',
  SQS_ENDPOINT: local.endpoint,
  POWERTOOLS_SERVICE_NAME: 'outbox-relay',
  POWERTOOLS_METRICS_DISABLED: 'false', // the test config silences metrics; this file asserts them
});
const { handler } = await import('../../lambda/handlers/outbox-relay.ts');

const SECRET = 'do-not-log-4711';

const enqueueCase = (caseId: string) =>
  db.sql.begin((sql) => enqueueOutbox(sql, caseStageEnvelope(caseId, 1, { note: SECRET })));

describe('Handler: outbox-relay Lambda entry point', () => {
  it('starts no round when less than the guard is left of the invocation', async () => {
    // Prepare
    await enqueueCase(`CASE-${randomUUID()}`);

    // Act
    const { result } = await captureOutput(() =>
      handler({}, lambdaContext({ functionName: 'relay', timeoutMs: 500 })),
    );

    // Assess
    expect(result).toMatchObject({ published: 0, rounds: 0, stoppedBy: 'deadline' });
    expect(await local.receiveAll(queueUrl)).toHaveLength(0);
  });

  it('publishes pending rows within the invocation and emits EMF metrics without payloads in the output', async () => {
    // Prepare
    await enqueueCase(`CASE-${randomUUID()}`);

    // Act
    const { result, lines, raw } = await captureOutput(() =>
      handler({}, lambdaContext({ functionName: 'relay', timeoutMs: 10_000 })),
    );

    // Assess
    expect(result).toMatchObject({ published: 2, failed: 0, stoppedBy: 'no-work' });
    expect(await local.receiveAll(queueUrl)).toHaveLength(2);
    const emf = lines.find((line) => '_aws' in line);
    expect(emf).toMatchObject({ OutboxPublished: 2, OutboxFailed: 0, OutboxOldestPendingAgeMs: 0 });
    expect(raw).not.toContain(SECRET);
  });
});
