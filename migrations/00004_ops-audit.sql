-- Audit of operator actions (tools/ops): DLQ redrives, move tasks, quarantine releases, inbox purges.
-- A move is recorded STARTED before the message is sent and DONE/FAILED after, so an interrupted run
-- leaves evidence of every message it may have sent.
create table ops_audit (
  audit_id bigint generated always as identity primary key,
  action varchar(50) not null,
  outcome varchar(20) not null,
  consumer varchar(100),
  source_queue text,
  target_queue text,
  sqs_message_id varchar(100),
  new_message_id varchar(100),
  idempotency_key varchar(200),
  message_type varchar(100),
  detail jsonb not null default '{}'::jsonb,
  actor varchar(200),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  constraint chk_ops_audit_outcome check (outcome in ('STARTED', 'DONE', 'FAILED'))
);

create index idx_ops_audit_created on ops_audit (created_at);

create index idx_ops_audit_key on ops_audit (idempotency_key);
