import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import type * as z from 'zod/mini';
import type { Envelope } from '../../worker/envelope.ts';
import type { ReferencedDocument } from '../../worker/routed-handler.ts';

/** One entry of TransactWriteItems in the document client's form (native values, not AttributeValues). */
export type DynamoTransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * What a failed condition on a domain item means, decided by the handler from the item as it is now (`current`,
 * undefined when the item does not exist):
 * - `'stale'`: the message is older than the state (version guard): the inbox item is completed alone and the
 *   message acknowledged as `STALE_VERSION_SKIPPED`;
 * - `'applied'`: the effect already exists (a create-only item written by an earlier message): the inbox item is
 *   completed alone and the message acknowledged as `COMPLETED`;
 * - an `Error` (`TerminalError`, `RetryableError`, …): the record fails with it, classified as if the handler had
 *   thrown it (counted as an attempt; a terminal one is quarantined).
 */
export type ConditionFailedRule = (
  current: Record<string, unknown> | undefined,
) => 'stale' | 'applied' | Error;

/**
 * A domain write of a DynamoDB handler: one TransactWriteItems entry (`Put`, `Update`, `Delete` or
 * `ConditionCheck`, with its `TableName`) and what a failed condition on it means.
 */
export type DynamoWrite = DynamoTransactItem & {
  /**
   * Decides what a `ConditionalCheckFailed` on this item means (see {@link ConditionFailedRule}).
   * @default a retryable `DOMAIN_CONDITION_FAILED`, bounded by the attempt policy
   */
  readonly onConditionFailed?: ConditionFailedRule;
};

/** What a DynamoDB domain handler receives. It reads through `client`; it never writes through it. */
export interface DynamoHandlerContext<P> {
  /**
   * The document client, for reads the handler needs to decide its writes (use `ConsistentRead`). Writes go in the
   * returned `writes`: only they commit with the inbox item.
   */
  readonly client: DynamoDBDocumentClient;
  /** The worker's table (inbox, quarantine and, by default, domain items). */
  readonly table: string;
  /** The worker's inbox namespace. */
  readonly consumer: string;
  /** The payload, validated by the handler's schema. */
  readonly payload: P;
  /** The verified bytes of a `payloadRef`, for a handler with `referencedPayload: 'document'`. */
  readonly document?: ReferencedDocument;
  /** The validated envelope. Never log `envelope.payload`. */
  readonly envelope: Envelope;
  /** The SQS record, for its attributes. */
  readonly record: SQSRecord;
}

/** What a DynamoDB domain handler returns. */
export interface DynamoHandlerResult {
  /**
   * The domain writes, committed in ONE TransactWriteItems with the inbox item's completion: at most
   * {@link MAX_DOMAIN_WRITES} (DynamoDB's limit of 100 items, less the inbox item). Empty or absent: only the inbox
   * item is completed.
   */
  readonly writes?: readonly DynamoWrite[];
  /** A reference to the effect (stored on the inbox item as `resultRef`, at most 300 characters). */
  readonly resultRef?: string;
  /** True when the message was older than the state and nothing is written (`STALE_VERSION_SKIPPED`). */
  readonly stale?: boolean;
}

/** Domain items one record may write: TransactWriteItems takes 100 items, one of them the inbox item. */
export const MAX_DOMAIN_WRITES = 99;

/** A domain handler for the DynamoDB store: returns its writes instead of running them. */
export interface DynamoMessageHandler<S extends z.core.$ZodType = z.core.$ZodType> {
  /** Marks a handler for the DynamoDB store: a PostgreSQL worker refuses it, and the other way round. */
  readonly store: 'dynamodb';
  /** The envelope `messageType` it handles. */
  readonly messageType: string;
  /** The envelope `schemaVersion` it handles. */
  readonly schemaVersion: number;
  /** Schema of the payload (`zod/mini` or `zod` 4.x); a payload that fails it is terminal `INVALID_PAYLOAD`. */
  readonly payload: S;
  /** How a `payloadRef` payload reaches the handler (see `MessageHandler.referencedPayload`). @default 'json' */
  readonly referencedPayload?: 'json' | 'document';
  /**
   * Decides the record's domain writes. It may read; it must not write (a write outside the returned list does
   * not commit with the inbox item, and happens again on a redelivery). Throw `TerminalError` for data that can
   * never succeed and `RetryableError` for conditions that may clear.
   */
  handle(context: DynamoHandlerContext<z.output<S>>): Promise<DynamoHandlerResult | undefined>;
}

/**
 * Declares a DynamoDB domain handler with its payload type inferred from its schema.
 *
 * @example
 * ```ts
 * export const caseStageChanged = defineDynamoHandler({
 *   messageType: 'CaseStageChanged',
 *   schemaVersion: 1,
 *   payload: z.object({ caseId: z.string(), stage: z.string(), version: z.int() }), // import * as z from 'zod/mini'
 *   async handle({ table, payload }) {
 *     return {
 *       writes: [{
 *         Update: {
 *           TableName: table,
 *           Key: { PK: `CASE#${payload.caseId}`, SK: 'META' },
 *           UpdateExpression: 'SET stage = :s, version = :v',
 *           ConditionExpression: 'attribute_not_exists(version) OR version < :v',
 *           ExpressionAttributeValues: { ':s': payload.stage, ':v': payload.version },
 *         },
 *         onConditionFailed: () => 'stale',
 *       }],
 *     };
 *   },
 * });
 * ```
 */
export function defineDynamoHandler<S extends z.core.$ZodType>(
  handler: Omit<DynamoMessageHandler<S>, 'store'>,
): DynamoMessageHandler<S> {
  return { ...handler, store: 'dynamodb' };
}
