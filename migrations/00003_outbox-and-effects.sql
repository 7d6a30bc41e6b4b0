-- Transactional outbox: written in the producer's transaction, published by the relay.
create table outbox_events (
  event_id varchar(100) primary key,
  idempotency_key varchar(200) not null,
  message_type varchar(100) not null,
  aggregate_type varchar(100) not null,
  aggregate_id varchar(200) not null,
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

create index idx_outbox_events_pending on outbox_events (next_attempt_at, sequence) where status = 'PENDING';

create index idx_outbox_events_aggregate_pending
  on outbox_events (aggregate_type, aggregate_id, sequence)
  where status = 'PENDING';

-- External-effect log: an effect is recorded PENDING before the provider is called.
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
