import { defineDynamoHandler } from '../../stores/dynamodb/index.ts';
import {
  documentMetadataExtractionRequestedRoute,
  extractDocument,
} from '../document-metadata-extraction-requested.ts';

/** The key of a document's item in the DynamoDB example domain. */
export const documentItemKey = (documentId: string) => ({ PK: `DOCUMENT#${documentId}`, SK: 'META' });

/**
 * `DocumentMetadataExtractionRequested` v1 on DynamoDB, sent with a `payloadRef` to the document in S3 (aggregateId =
 * the document id): the worker has read the document and checked its size and SHA-256 before this runs. Puts the
 * document's item `DOCUMENT#<documentId>` / `META` (type, size, SHA-256, page or line count, indexing status, source
 * object, `requestedAt`) in the inbox completion's transaction, as the PostgreSQL handler writes its `documents` row.
 *
 * - The condition `attribute_not_exists(PK) OR requestedAt < :requestedAt` keeps a newer request's item: when it
 *   fails, the item returned with the failure decides — the same bytes (its `sha256`) are the same document again,
 *   acknowledged as `COMPLETED`; anything else is an older request, `STALE_VERSION_SKIPPED`.
 * - No document (a worker that does not read `payloadRef`) is terminal `DOCUMENT_MISSING`.
 */
export const documentMetadataExtractionRequestedDynamo = defineDynamoHandler({
  ...documentMetadataExtractionRequestedRoute,
  async handle({ table, envelope, document }) {
    const extracted = extractDocument(document);
    const documentId = envelope.aggregateId;
    // ISO strings in UTC with milliseconds compare in time order: the condition can use <.
    const requestedAt = new Date(envelope.occurredAt).toISOString();
    const { pageCount, lineCount, source } = extracted;
    return {
      writes: [
        {
          Put: {
            TableName: table,
            Item: {
              ...documentItemKey(documentId),
              contentType: extracted.contentType,
              sizeBytes: extracted.sizeBytes,
              sha256: extracted.sha256,
              // Absent rather than null, as DynamoDB items go: a PDF has no lines, a text no pages.
              ...(pageCount === null ? {} : { pageCount }),
              ...(lineCount === null ? {} : { lineCount }),
              indexingStatus: extracted.indexingStatus,
              sourceBucket: source.bucket,
              sourceKey: source.key,
              ...(source.versionId ? { sourceVersionId: source.versionId } : {}),
              requestedAt,
              sourceEventId: envelope.messageId,
            },
            ConditionExpression: 'attribute_not_exists(PK) OR requestedAt < :requestedAt',
            ExpressionAttributeValues: { ':requestedAt': requestedAt },
          },
          onConditionFailed: (current) => (current?.sha256 === extracted.sha256 ? 'applied' : 'stale'),
        },
      ],
      resultRef: `documents/${documentId}`,
    };
  },
});
