import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { inboxKey, quarantineKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { OperationError } from '../../errors.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';
import type { DynamoQuarantineEntry, ReleaseClaim } from './dynamo-quarantine-entry.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * How long a release may hold an item before another operator may take it (its command died).
 *
 * @internal
 */
export const RELEASE_CLAIM_MS = 120_000;

/**
 * The inbox item as the release found it, when it re-arms it.
 *
 * @internal
 */
export interface InboxBefore {
  readonly status: string;
  readonly attempts: number;
  readonly leaseToken: string;
  readonly failureCode: string | null;
}

/**
 * A quarantine item claimed by one release: its keys, the claim's token and when the claim ends, and the inbox item
 * it re-armed (null: none).
 *
 * @internal
 */
export interface HeldRelease {
  readonly entry: DynamoQuarantineEntry;
  readonly qKey: ReturnType<typeof quarantineKey>;
  readonly iKey: ReturnType<typeof inboxKey> | undefined;
  readonly claim: ReleaseClaim;
  readonly rearmed: InboxBefore | null;
}

/**
 * The inbox item's status, attempts and lease token (consistent read), or null when the key has none.
 *
 * @internal
 */
export async function readInbox(
  dynamo: DynamoOpsTarget,
  consumer: string,
  idempotencyKey: string,
): Promise<InboxBefore | null> {
  const { Item } = await dynamo.doc.send(
    new GetCommand({
      TableName: dynamo.tableName,
      Key: inboxKey(consumer, idempotencyKey),
      ConsistentRead: true,
      ProjectionExpression: '#status, attempts, leaseToken, failureCode',
      ExpressionAttributeNames: { '#status': 'status' },
    }),
  );
  if (!Item) return null;
  return {
    status: String(Item.status),
    attempts: Number(Item.attempts ?? 0),
    leaseToken: String(Item.leaseToken),
    failureCode: typeof Item.failureCode === 'string' ? Item.failureCode : null,
  };
}

/**
 * Transaction 1 of a release: claims the quarantine item (`releaseClaim` = a new token until now + 2 min; condition:
 * not released, not claimed or the claim expired, `lastQuarantinedAt` unchanged) and re-arms `rearm`, the inbox item
 * (FAILED_RETRYABLE with `attempts` 0; condition: unchanged since it was read).
 *
 * @throws OperationError naming what changed meanwhile when a condition fails; nothing was sent.
 * @internal
 */
export async function claimForRelease(
  dynamo: DynamoOpsTarget,
  input: { entry: DynamoQuarantineEntry; rearm: InboxBefore | null; actor: string; now: Date },
): Promise<HeldRelease> {
  const { entry, rearm, now } = input;
  const claim: ReleaseClaim = {
    token: randomUUID(),
    actor: input.actor,
    at: now.toISOString(),
    expiresAt: now.getTime() + RELEASE_CLAIM_MS,
  };
  const qKey = quarantineKey(entry.consumer, entry.bodyHash);
  const iKey = entry.idempotencyKey ? inboxKey(entry.consumer, entry.idempotencyKey) : undefined;
  const writes: TransactItem[] = [
    {
      Update: {
        TableName: dynamo.tableName,
        Key: qKey,
        UpdateExpression: 'SET #claim = :claim',
        ConditionExpression:
          'attribute_exists(PK) AND attribute_not_exists(releasedAt) AND lastQuarantinedAt = :last AND ' +
          '(attribute_not_exists(#claim) OR #claim.expiresAt < :now)',
        ExpressionAttributeNames: { '#claim': 'releaseClaim' },
        ExpressionAttributeValues: {
          ':claim': claim,
          ':last': entry.lastQuarantinedAt.toISOString(),
          ':now': now.getTime(),
        },
      },
    },
  ];
  if (rearm && iKey) {
    writes.push({
      Update: {
        TableName: dynamo.tableName,
        Key: iKey,
        UpdateExpression: 'SET #status = :retryable, attempts = :zero',
        ConditionExpression: '#status = :before AND leaseToken = :lease',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':retryable': 'FAILED_RETRYABLE',
          ':zero': 0,
          ':before': rearm.status,
          ':lease': rearm.leaseToken,
        },
      },
    });
  }
  try {
    await dynamo.doc.send(new TransactWriteCommand({ TransactItems: writes }));
  } catch (error) {
    throw claimFailure(error, entry.quarantineId);
  }
  return { entry, qKey, iKey, claim, rearmed: rearm && iKey ? rearm : null };
}

/**
 * Transaction 2 of a release: `releasedAt`, `releasedMessageId`, `releasedBy` (and an edited release's
 * `releasedAsKey`) on the item, its claim removed
 * (condition: still our token, `lastQuarantinedAt` unchanged), and the audit item, together.
 *
 * @internal
 */
export async function markReleased(
  dynamo: DynamoOpsTarget,
  held: HeldRelease,
  release: {
    at: Date;
    releasedMessageId: string;
    actor: string;
    auditItem: Record<string, unknown>;
    /** The key an edited release sent its corrected body under. */
    releasedAsKey?: string | undefined;
  },
): Promise<void> {
  await dynamo.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: dynamo.tableName,
            Key: held.qKey,
            UpdateExpression: `SET releasedAt = :at, releasedMessageId = :mid, releasedBy = :actor${
              release.releasedAsKey ? ', releasedAsKey = :as' : ''
            } REMOVE #claim`,
            ConditionExpression: '#claim.#token = :token AND lastQuarantinedAt = :last',
            ExpressionAttributeNames: { '#claim': 'releaseClaim', '#token': 'token' },
            ExpressionAttributeValues: {
              ':at': release.at.toISOString(),
              ':mid': release.releasedMessageId,
              ':actor': release.actor,
              ':token': held.claim.token,
              ':last': held.entry.lastQuarantinedAt.toISOString(),
              ...(release.releasedAsKey ? { ':as': release.releasedAsKey } : {}),
            },
          },
        },
        {
          Put: {
            TableName: dynamo.tableName,
            Item: release.auditItem,
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
      ],
    }),
  );
}

/** Explains a claim transaction that did not go through (nothing was sent). */
function claimFailure(error: unknown, id: string): unknown {
  if (!(error instanceof TransactionCanceledException)) return error;
  const [quarantine, inbox] = error.CancellationReasons ?? [];
  if (quarantine?.Code === 'ConditionalCheckFailed') {
    return new OperationError(
      `Quarantine item ${id} changed while it was being released (another operator released or claimed it, or the ` +
        `worker quarantined it again); nothing was sent. Look at "sqs-worker quarantine show ${id} --store dynamodb" ` +
        'and release again if it is still open.',
      { cause: error },
    );
  }
  if (inbox?.Code === 'ConditionalCheckFailed') {
    return new OperationError(
      `The inbox item of quarantine item ${id} changed while it was being released (a copy of the message is being ` +
        'processed); nothing was sent. Release again once "sqs-worker inbox show <key> --store dynamodb" shows it failed.',
      { cause: error },
    );
  }
  return new OperationError(
    `Claiming quarantine item ${id} failed: ${error.message}; nothing was sent. Release again.`,
    { cause: error },
  );
}

/**
 * Removes our claim and, with `restoreInbox`, puts the re-armed inbox item back as it was; false when that failed
 * (the claim then expires).
 *
 * @internal
 */
export async function undoClaim(
  dynamo: DynamoOpsTarget,
  held: HeldRelease,
  options: { restoreInbox: boolean },
): Promise<boolean> {
  const writes: TransactItem[] = [
    {
      Update: {
        TableName: dynamo.tableName,
        Key: held.qKey,
        UpdateExpression: 'REMOVE #claim',
        ConditionExpression: '#claim.#token = :token',
        ExpressionAttributeNames: { '#claim': 'releaseClaim', '#token': 'token' },
        ExpressionAttributeValues: { ':token': held.claim.token },
      },
    },
  ];
  const inbox = options.restoreInbox ? held.rearmed : null;
  if (inbox && held.iKey) {
    writes.push({
      Update: {
        TableName: dynamo.tableName,
        Key: held.iKey,
        UpdateExpression: 'SET #status = :before, attempts = :attempts',
        ConditionExpression: '#status = :retryable AND attempts = :zero AND leaseToken = :lease',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':before': inbox.status,
          ':attempts': inbox.attempts,
          ':retryable': 'FAILED_RETRYABLE',
          ':zero': 0,
          ':lease': inbox.leaseToken,
        },
      },
    });
  }
  try {
    await dynamo.doc.send(new TransactWriteCommand({ TransactItems: writes }));
    return true;
  } catch {
    return false;
  }
}
