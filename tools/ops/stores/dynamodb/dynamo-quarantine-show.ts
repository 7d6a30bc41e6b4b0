import { GetCommand, paginateScan, QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  QUARANTINE_PK_PREFIX,
  quarantineKey,
  WORKER_SK_PREFIX,
} from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { OperationError } from '../../errors.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import { newerEventsFields, renderQuarantineEntry } from '../../render-quarantine-entry.ts';
import { ANY_AGGREGATE_TYPE, findDynamoNewerCompletedEvents } from './dynamo-newer-completed-events.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';
import { type DynamoQuarantineEntry, toDynamoQuarantineEntry } from './dynamo-quarantine-entry.ts';

/** Result of {@link dynamoQuarantineShow}: the entry and what a release would re-send it after. */
export interface DynamoQuarantineShowResult extends DynamoQuarantineEntry {
  /** The message's aggregate (from its envelope, else the id of its inbox item); null when neither names one. */
  readonly aggregateType: string | null;
  readonly aggregateId: string | null;
  /**
   * COMPLETED inbox items of that aggregate id the consumer completed after this message was first seen (any
   * aggregate type: inbox items keep no type); null: no aggregate.
   */
  readonly newerCompletedEvents: number | null;
}

/** Shortest body-hash prefix accepted as an id (`inbox show` prints 12 characters). */
const MIN_PREFIX = 8;

/**
 * Reads one quarantine item of a consumer, body included. `id` is its body hash as `quarantine list` prints it, or a
 * unique prefix of at least 8 hex characters (`inbox show` prints 12); a full hash is one consistent GetItem, a
 * prefix a scan of the table.
 *
 * @throws OperationError (exit 1) when the id is not a hex body hash, matches nothing (naming the consumers that have
 *   it, if any) or, as a prefix, several items.
 * @internal
 */
export async function loadDynamoQuarantineEntry(
  dynamo: DynamoOpsTarget,
  consumer: string,
  id: string,
): Promise<DynamoQuarantineEntry> {
  if (!new RegExp(`^[0-9a-fA-F]{${MIN_PREFIX},64}$`).test(id)) {
    throw new OperationError(
      `Quarantine id must be the body hash (64 hex characters, or a unique prefix of at least ${MIN_PREFIX}) as ` +
        `"quarantine list --store dynamodb" shows it (given "${id}")`,
    );
  }
  const hash = id.toLowerCase();
  let bodyHash = hash;
  if (hash.length < 64) {
    const matches: string[] = [];
    const pages = paginateScan(
      { client: dynamo.doc },
      {
        TableName: dynamo.tableName,
        ConsistentRead: true,
        FilterExpression: 'begins_with(PK, :prefix) AND SK = :sk',
        ProjectionExpression: 'PK',
        ExpressionAttributeValues: {
          ':prefix': `${QUARANTINE_PK_PREFIX}${hash}`,
          ':sk': `${WORKER_SK_PREFIX}${consumer}`,
        },
      },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) matches.push(String(item.PK).slice(QUARANTINE_PK_PREFIX.length));
    }
    if (matches.length > 1) {
      throw new OperationError(
        `Quarantine id "${id}" matches ${matches.length} items of consumer "${consumer}" (${matches.sort().join(', ')}); ` +
          'give more characters of the body hash.',
      );
    }
    bodyHash = matches[0] ?? hash;
  }
  const { Item } = await dynamo.doc.send(
    new GetCommand({
      TableName: dynamo.tableName,
      Key: quarantineKey(consumer, bodyHash),
      ConsistentRead: true,
    }),
  );
  if (Item) return toDynamoQuarantineEntry(Item);
  const others =
    bodyHash.length === 64
      ? await consumersOf(dynamo, bodyHash).then((names) => names.filter((n) => n !== consumer))
      : [];
  throw new OperationError(
    `No quarantine item "${id}" for consumer "${consumer}" in table ${dynamo.tableName}. ` +
      (others.length > 0
        ? `It is quarantined for consumer ${others.map((n) => `"${n}"`).join(', ')}: pass --consumer / WORKER_CONSUMER of that worker.`
        : '"sqs-worker quarantine list --all --store dynamodb" lists the ids (body hashes); check --consumer / WORKER_CONSUMER and --dynamodb-table / DYNAMODB_TABLE.'),
  );
}

/** The consumers that have a quarantine item of this body (one Query on its partition). */
async function consumersOf(dynamo: DynamoOpsTarget, bodyHash: string): Promise<string[]> {
  const { Items = [] } = await dynamo.doc.send(
    new QueryCommand({
      TableName: dynamo.tableName,
      KeyConditionExpression: 'PK = :pk',
      ProjectionExpression: 'SK',
      ExpressionAttributeValues: { ':pk': `${QUARANTINE_PK_PREFIX}${bodyHash}` },
    }),
  );
  return Items.map((item) => String(item.SK).slice(WORKER_SK_PREFIX.length));
}

/**
 * `quarantine show <id>` on the DynamoDB store: one quarantine item with its reason, SQS attributes, message
 * attributes and its BODY (payload values, on purpose: do not paste the output into tickets or chat without
 * redacting), as on PostgreSQL. A body cut at 300 KiB by the store (`bodyTruncated`) is shown as stored and said so,
 * and so are the message and SQS attributes the store dropped to fit the item in 400 KB (named, without values).
 *
 * It also counts the COMPLETED inbox items of the message's aggregate id after the message was first seen, so the
 * operator sees before a release that it would re-send an older event after newer ones (see
 * {@link findDynamoNewerCompletedEvents} for what the DynamoDB item model can and cannot match).
 *
 * @throws OperationError (exit 1) when the id does not exist for the consumer.
 */
export async function dynamoQuarantineShow(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput },
  options: { consumer: string; quarantineId: string },
): Promise<DynamoQuarantineShowResult> {
  const entry = await loadDynamoQuarantineEntry(deps.dynamo, options.consumer, options.quarantineId);
  const newer = await findDynamoNewerCompletedEvents(deps.dynamo, entry, { limit: 0 });
  const result: DynamoQuarantineShowResult = { ...entry, ...newerEventsFields(newer) };
  emit(deps.out, result, () => {
    const {
      body: _body,
      sqsAttributes: _sqs,
      messageAttributes: _attributes,
      messageAttributesDropped: _droppedMessage,
      sqsAttributesDropped: _droppedSqs,
      releaseClaim,
      ...fields
    } = result;
    return renderQuarantineEntry(
      fields,
      result,
      [
        ...droppedLines(result),
        ...(releaseClaim
          ? [
              `Being released by ${releaseClaim.actor} since ${releaseClaim.at} (claim ends ${new Date(releaseClaim.expiresAt).toISOString()}).`,
            ]
          : []),
        newerLine(result, newer.since),
      ],
      result.bodyTruncated
        ? 'Body (contains payload values; CUT at 300 KiB by the store, the SHA-256 is of the whole body):'
        : undefined,
    );
  });
  return result;
}

/** The lines naming the attributes the store did not keep (names only: an attribute's value may be a payload's). */
function droppedLines(entry: DynamoQuarantineEntry): string[] {
  const line = (what: string, dropped: readonly string[]) =>
    `${what} NOT kept by the store (the item would not fit DynamoDB's 400 KB with them): ${dropped.join(', ')}.`;
  return [
    ...(entry.messageAttributesDropped.length > 0
      ? [line('Message attributes', entry.messageAttributesDropped)]
      : []),
    ...(entry.sqsAttributesDropped.length > 0 ? [line('SQS attributes', entry.sqsAttributesDropped)] : []),
  ];
}

/** The line about newer completed events of the aggregate (no payload values). */
function newerLine(result: DynamoQuarantineShowResult, since: Date): string {
  if (result.newerCompletedEvents === null) {
    return 'Newer completed events: unknown (no aggregateType/aggregateId in the body and no inbox item).';
  }
  const of =
    result.aggregateType === ANY_AGGREGATE_TYPE
      ? `of aggregate id "${result.aggregateId}" (any type)`
      : `of ${result.aggregateType} "${result.aggregateId}"`;
  const line = `Newer completed events ${of} completed after this message was first seen (${since.toISOString()})`;
  return result.newerCompletedEvents === 0
    ? `${line}: 0.`
    : `${line}: ${result.newerCompletedEvents}. "quarantine release ${result.quarantineId} --store dynamodb" ` +
        'lists them and refuses without --force: this older event would be applied after them.';
}
