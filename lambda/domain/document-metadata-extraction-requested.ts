import { isUtf8 } from 'node:buffer';
import * as z from 'zod/mini';
import { defineHandler, type ReferencedDocument, TerminalError } from '../index.ts';

/** What the first bytes of a document say it is, and what can be counted in it. */
export interface DocumentMetadata {
  /** `application/pdf`, `text/plain` or `application/octet-stream`. */
  readonly contentType: string;
  /** Pages of a PDF (its `/Type /Page` objects); null for other types. */
  readonly pageCount: number | null;
  /** Lines of a text document (a last line without a newline counts); null for other types. */
  readonly lineCount: number | null;
}

const PDF_MAGIC = Buffer.from('%PDF-', 'latin1');
/** Bytes looked at to tell text from binary. */
const SNIFF_BYTES = 8192;

/**
 * Detects a document's type from its first bytes and counts its pages (PDF) or lines (text). The page count reads
 * the page objects of the file (`/Type /Page`): exact for the uncompressed page trees most generators write, a
 * lower bound when a PDF hides them in compressed object streams (docs/large-payloads.md).
 *
 * @example
 * ```ts
 * describeDocument(Buffer.from('one\ntwo\n')); // { contentType: 'text/plain', pageCount: null, lineCount: 2 }
 * ```
 */
export function describeDocument(bytes: Buffer): DocumentMetadata {
  if (bytes.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) {
    const pages = bytes.toString('latin1').match(/\/Type\s*\/Page(?![A-Za-z])/g);
    return { contentType: 'application/pdf', pageCount: pages?.length ?? 0, lineCount: null };
  }
  const head = bytes.subarray(0, SNIFF_BYTES);
  // Text: no NUL byte and valid UTF-8 (a multi-byte character cut at the sniff boundary is allowed).
  const cut = bytes.length > SNIFF_BYTES ? [0, 1, 2, 3] : [0];
  const text = !head.includes(0) && cut.some((n) => isUtf8(head.subarray(0, head.length - n)));
  if (!text) return { contentType: 'application/octet-stream', pageCount: null, lineCount: null };
  let lines = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) lines += 1;
  if (bytes.length > 0 && bytes[bytes.length - 1] !== 10) lines += 1;
  return { contentType: 'text/plain', pageCount: null, lineCount: lines };
}

/**
 * The payload of `DocumentMetadataExtractionRequested` v1: the `payloadRef` itself (`{ bucket, key, versionId?,
 * sha256, size }`); the bytes arrive in the handler's `document`. Shared by the PostgreSQL and DynamoDB handlers.
 */
export const documentMetadataExtractionRequestedPayload = z.object({
  bucket: z.string(),
  key: z.string(),
  versionId: z.nullish(z.string()),
  sha256: z.string(),
  size: z.number(),
});

/**
 * How `DocumentMetadataExtractionRequested` v1 is routed on either store: its type and version, its payload (the
 * reference itself) and its bytes read as a `document`.
 */
export const documentMetadataExtractionRequestedRoute = {
  messageType: 'DocumentMetadataExtractionRequested',
  schemaVersion: 1,
  referencedPayload: 'document',
  payload: documentMetadataExtractionRequestedPayload,
} as const;

/** What both stores' handlers store of a referenced document: its metadata, indexing status and source. */
export interface ExtractedDocument extends DocumentMetadata {
  /** `INDEXED`, or `UNSUPPORTED_TYPE` for a document that is neither PDF nor text. */
  readonly indexingStatus: 'INDEXED' | 'UNSUPPORTED_TYPE';
  /** Its size in bytes and SHA-256 (hex), as verified against the reference. */
  readonly sizeBytes: number;
  readonly sha256: string;
  /** The object it was read from. */
  readonly source: ReferencedDocument['ref'];
}

/**
 * The metadata and indexing status of the verified document of a `DocumentMetadataExtractionRequested`, for the
 * PostgreSQL and DynamoDB handlers alike.
 *
 * @throws TerminalError `DOCUMENT_MISSING` when the handler was given no document (registered on a worker that does
 *   not read `payloadRef`).
 */
export function extractDocument(document: ReferencedDocument | undefined): ExtractedDocument {
  if (!document) {
    throw new TerminalError(
      'DOCUMENT_MISSING',
      'DocumentMetadataExtractionRequested ran without its document; register it on a worker that reads payloadRef (createWorker s3)',
    );
  }
  const metadata = describeDocument(document.bytes);
  const indexingStatus = metadata.contentType === 'application/octet-stream' ? 'UNSUPPORTED_TYPE' : 'INDEXED';
  return {
    ...metadata,
    indexingStatus,
    sizeBytes: document.size,
    sha256: document.sha256,
    source: document.ref,
  };
}

/**
 * `DocumentMetadataExtractionRequested` v1, sent with a `payloadRef` to the document in S3 (aggregateId = the
 * document id): the worker has read the document and checked its size and SHA-256 before this runs. Stores its
 * type, size, SHA-256, page or line count and indexing status in `documents`, in the inbox transaction. An
 * older request (by occurredAt) than the one stored is a stale no-op; the same document again is a no-op.
 */
export const documentMetadataExtractionRequested = defineHandler({
  ...documentMetadataExtractionRequestedRoute,
  async handle({ sql, envelope, document }) {
    const extracted = extractDocument(document);
    const documentId = envelope.aggregateId;
    const written = await sql`
      insert into documents (
        document_id, content_type, size_bytes, sha256, page_count, line_count, indexing_status,
        source_bucket, source_key, source_version_id, requested_at
      )
      values (
        ${documentId}, ${extracted.contentType}, ${extracted.sizeBytes}, ${extracted.sha256},
        ${extracted.pageCount}, ${extracted.lineCount}, ${extracted.indexingStatus}, ${extracted.source.bucket},
        ${extracted.source.key}, ${extracted.source.versionId ?? null}, ${envelope.occurredAt}
      )
      on conflict (document_id) do update set
        content_type = excluded.content_type, size_bytes = excluded.size_bytes, sha256 = excluded.sha256,
        page_count = excluded.page_count, line_count = excluded.line_count,
        indexing_status = excluded.indexing_status, source_bucket = excluded.source_bucket,
        source_key = excluded.source_key, source_version_id = excluded.source_version_id,
        requested_at = excluded.requested_at, updated_at = now()
      where documents.requested_at < excluded.requested_at
      returning document_id
    `;
    if (written.length === 0) {
      const [current] = await sql<{ sha256: string }[]>`
        select sha256 from documents where document_id = ${documentId}`;
      // The same bytes under another request: nothing to change. Anything else is older than what is stored.
      if (current?.sha256 !== extracted.sha256) return { stale: true };
    }
    return { resultRef: `documents/${documentId}` };
  },
});
