import { isUtf8 } from 'node:buffer';
import * as z from 'zod/mini';
import { defineHandler, TerminalError } from '../index.ts';

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
 * `DocumentMetadataExtractionRequested` v1, sent with a `payloadRef` to the document in S3 (aggregateId = the
 * document id): the worker has read the document and checked its size and SHA-256 before this runs. Stores its
 * type, size, SHA-256, page or line count and indexing status in `documents`, in the inbox transaction. An
 * older request (by occurredAt) than the one stored is a stale no-op; the same document again is a no-op.
 */
export const documentMetadataExtractionRequested = defineHandler({
  messageType: 'DocumentMetadataExtractionRequested',
  schemaVersion: 1,
  referencedPayload: 'document',
  // A document handler's payload is the reference itself; the bytes arrive in `document`.
  payload: z.object({
    bucket: z.string(),
    key: z.string(),
    versionId: z.nullish(z.string()),
    sha256: z.string(),
    size: z.number(),
  }),
  async handle({ sql, envelope, document }) {
    if (!document) {
      throw new TerminalError(
        'DOCUMENT_MISSING',
        'DocumentMetadataExtractionRequested ran without its document; register it on a worker that reads payloadRef (createWorker s3)',
      );
    }
    const documentId = envelope.aggregateId;
    const metadata = describeDocument(document.bytes);
    const status = metadata.contentType === 'application/octet-stream' ? 'UNSUPPORTED_TYPE' : 'INDEXED';
    const written = await sql`
      insert into documents (
        document_id, content_type, size_bytes, sha256, page_count, line_count, indexing_status,
        source_bucket, source_key, source_version_id, requested_at
      )
      values (
        ${documentId}, ${metadata.contentType}, ${document.size}, ${document.sha256}, ${metadata.pageCount},
        ${metadata.lineCount}, ${status}, ${document.ref.bucket}, ${document.ref.key},
        ${document.ref.versionId ?? null}, ${envelope.occurredAt}
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
      if (current?.sha256 !== document.sha256) return { stale: true };
    }
    return { resultRef: `documents/${documentId}` };
  },
});
