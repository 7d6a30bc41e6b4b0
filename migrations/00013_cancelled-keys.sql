-- Operator actions of the runbook "the DLQ has messages" (docs/operations.md).
--
-- `sqs-worker inbox cancel <key>`: a cancelled key is never applied. `worker_cancelled_keys` is the marker, kept
-- apart from `worker_inbox` on purpose: a copy of the key in flight holds its inbox row (or the uncommitted insert
-- of it) until its transaction ends, and the cancel must not wait for that copy to commit its effect. The claim
-- statements read the marker (a key cancelled before a copy arrives is claimed CANCELLED and quarantined, its handler
-- never runs); a copy that claimed the key before the cancel is stopped at its COMMIT by the deferred constraint
-- triggers below, which refuse a COMPLETED row of a cancelled key (SQLSTATE IWC01): its transaction rolls back whole,
-- effect included. Markers are kept (no retention job deletes them).
create table worker_cancelled_keys (
  consumer varchar(100) not null,
  idempotency_key varchar(200) not null,
  reason text,
  cancelled_by varchar(200) not null,
  cancelled_at timestamptz not null default now(),
  constraint worker_cancelled_keys_pkey primary key (consumer, idempotency_key)
);

alter table worker_inbox drop constraint chk_worker_inbox_status;

alter table worker_inbox add constraint chk_worker_inbox_status check (
  status in ('RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL', 'CANCELLED')
);

create function worker_inbox_refuse_cancelled() returns trigger
language plpgsql as $$
begin
  if exists (
    select 1 from worker_cancelled_keys c
    where c.consumer = new.consumer and c.idempotency_key = new.idempotency_key
  ) then
    raise exception 'idempotency key was cancelled by an operator while this delivery was in flight'
      using errcode = 'IWC01';
  end if;
  return null;
end
$$;

create constraint trigger trg_worker_inbox_completed_insert
  after insert on worker_inbox
  deferrable initially deferred
  for each row when (new.status = 'COMPLETED')
  execute function worker_inbox_refuse_cancelled();

create constraint trigger trg_worker_inbox_completed_update
  after update of status on worker_inbox
  deferrable initially deferred
  for each row when (new.status = 'COMPLETED' and old.status is distinct from 'COMPLETED')
  execute function worker_inbox_refuse_cancelled();

-- `sqs-worker quarantine release <id> --edit <file>`: the corrected body is sent under a new version of the key
-- (`<key>:v2`, `:v3`, …); the original entry keeps its body and records the key it was released as.
alter table worker_quarantine add column released_as_key varchar(200);
