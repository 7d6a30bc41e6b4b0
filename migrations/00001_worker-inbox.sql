-- Inbox: one row per (consumer, idempotency key). Claimed, mutated and completed in one transaction.
create table worker_inbox (
  consumer varchar(100) not null,
  idempotency_key varchar(200) not null,
  message_type varchar(100) not null,
  schema_version integer not null,
  aggregate_type varchar(100) not null,
  aggregate_id varchar(200) not null,
  status varchar(30) not null,
  request_hash char(64) not null,
  first_seen_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  failure_code varchar(100),
  failure_message text,
  receive_count integer not null default 0,
  result_ref varchar(300),
  last_message_id varchar(100),
  correlation_id varchar(200),
  constraint worker_inbox_pkey primary key (consumer, idempotency_key),
  constraint chk_worker_inbox_status check (
    status in ('RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL')
  )
);

create index idx_worker_inbox_aggregate on worker_inbox (aggregate_type, aggregate_id);

create index idx_worker_inbox_status_seen on worker_inbox (status, last_seen_at);

-- Quarantine: terminal messages kept for investigation, including ones without a usable envelope.
create table worker_quarantine (
  quarantine_id bigint generated always as identity primary key,
  consumer varchar(100) not null,
  body_hash char(64) not null,
  body text not null,
  sqs_message_id varchar(100),
  idempotency_key varchar(200),
  message_type varchar(100),
  reason_code varchar(100) not null,
  reason_message text not null,
  sqs_attributes jsonb not null default '{}'::jsonb,
  message_attributes jsonb not null default '{}'::jsonb,
  event_source_arn text,
  occurrences integer not null default 1,
  first_quarantined_at timestamptz not null default now(),
  last_quarantined_at timestamptz not null default now(),
  released_at timestamptz,
  released_message_id varchar(100),
  constraint uq_worker_quarantine_body unique (consumer, body_hash)
);

create index idx_worker_quarantine_key on worker_quarantine (consumer, idempotency_key);

create index idx_worker_quarantine_reason on worker_quarantine (reason_code, last_quarantined_at);
