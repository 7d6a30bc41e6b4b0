-- Example domain: metadata of documents sent by reference (payloadRef), written by
-- lambda/domain/document-metadata-extraction-requested.ts in the inbox transaction. `requested_at` (the
-- envelope's occurredAt) guards the row: an older request never replaces what a newer one stored.
create table documents (
  document_id varchar(200) primary key,
  content_type varchar(100) not null,
  size_bytes bigint not null,
  sha256 char(64) not null,
  page_count integer,
  line_count integer,
  indexing_status varchar(30) not null,
  source_bucket varchar(63) not null,
  source_key varchar(1024) not null,
  source_version_id varchar(1024),
  requested_at timestamptz not null,
  updated_at timestamptz not null default now(),
  constraint chk_documents_indexing_status check (indexing_status in ('INDEXED', 'UNSUPPORTED_TYPE')),
  constraint chk_documents_counts check (page_count is null or page_count >= 0)
);
