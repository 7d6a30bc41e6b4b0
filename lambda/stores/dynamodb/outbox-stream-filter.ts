import { OUTBOX_PK_PREFIX } from './item-keys.ts';

/**
 * The filter pattern of the outbox relay's event source mapping (Lambda's event filtering on DynamoDB Streams): the
 * INSERT of an outbox item. The relay's mark (MODIFY), its TTL removal (REMOVE) and every other item's changes never
 * invoke it. The stack gives it to the mapping as it is; the local stream reader applies it with
 * {@link matchesOutboxStreamFilter}.
 *
 * @internal
 */
export const OUTBOX_STREAM_FILTER = {
  eventName: ['INSERT'],
  dynamodb: { Keys: { PK: { S: [{ prefix: OUTBOX_PK_PREFIX }] } } },
} as const;

/**
 * True when a stream record passes {@link OUTBOX_STREAM_FILTER}.
 *
 * @internal
 */
export function matchesOutboxStreamFilter(record: {
  readonly eventName?: string;
  readonly dynamodb?: { readonly Keys?: Record<string, { S?: string } | undefined> };
}): boolean {
  const pk = record.dynamodb?.Keys?.PK?.S;
  return record.eventName === 'INSERT' && typeof pk === 'string' && pk.startsWith(OUTBOX_PK_PREFIX);
}
