-- Audit of operator actions (DLQ redrives, quarantine releases).
create table ops_audit (
  audit_id bigint generated always as identity primary key,
  action varchar(50) not null,
  source_queue text,
  target_queue text,
  sqs_message_id varchar(100),
  new_message_id varchar(100),
  idempotency_key varchar(200),
  message_type varchar(100),
  detail jsonb not null default '{}'::jsonb,
  actor varchar(200),
  created_at timestamptz not null default now()
);

create index idx_ops_audit_created on ops_audit (created_at);
