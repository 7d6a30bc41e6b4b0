-- Transactional outbox: written in the producer's transaction (lambda/outbox/enqueue-outbox.ts), published by
-- the relay (lambda/outbox/relay-outbox.ts). `sequence` is the commit-independent insertion order used for
-- per-aggregate ordering; a row is only sent when no older PENDING row of its aggregate exists.
create table outbox_events (
  event_id varchar(100) primary key,
  idempotency_key varchar(200) not null,
  message_type varchar(100) not null,
  schema_version integer not null,
  aggregate_type varchar(100) not null,
  aggregate_id varchar(200) not null,
  request_hash char(64) not null,
  envelope jsonb not null,
  status varchar(30) not null default 'PENDING',
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  locked_until timestamptz,
  locked_by varchar(100),
  last_error text,
  sqs_message_id varchar(100),
  created_at timestamptz not null default now(),
  published_at timestamptz,
  sequence bigint generated always as identity,
  constraint uq_outbox_events_idempotency_key unique (idempotency_key),
  constraint chk_outbox_events_status check (status in ('PENDING', 'PUBLISHED'))
);

-- Claim scan (oldest first) and the oldest-pending-age metric.
create index idx_outbox_events_pending on outbox_events (sequence) where status = 'PENDING';

-- "Is there an older PENDING row of this aggregate?"
create index idx_outbox_events_aggregate_pending
  on outbox_events (aggregate_type, aggregate_id, sequence)
  where status = 'PENDING';

-- Retention of published rows (delete where published_at < …).
create index idx_outbox_events_published on outbox_events (published_at) where status = 'PUBLISHED';

-- External-effect log (pattern document §17): an effect is recorded PENDING in its own committed transaction
-- before the provider is called with `effect_key` as its idempotency key (lambda/effects).
create table external_effect_log (
  effect_key varchar(200) primary key,
  provider varchar(100) not null,
  operation varchar(100) not null,
  status varchar(30) not null,
  request_hash char(64) not null,
  provider_reference varchar(300),
  attempts integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint chk_external_effect_log_status check (status in ('PENDING', 'COMPLETED', 'FAILED_TERMINAL'))
);

create index idx_external_effect_log_status on external_effect_log (status, updated_at);

-- Example domain: escalation notifications sent for a case (lambda/domain/case-escalation-requested.ts).
create table case_notifications (
  source_event_id text primary key,
  case_id text not null references cases (case_id),
  recipient text not null,
  effect_key varchar(200) not null references external_effect_log (effect_key),
  provider_reference varchar(300) not null,
  created_at timestamptz not null default now()
);
