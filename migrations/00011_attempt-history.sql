-- Attempt history and worker versions, for the DLQ runbook (docs/operations.md, "Attempt history" and "Classify
-- before redrive"). `worker_inbox.first_version` is the worker version (config.workerVersion: WORKER_VERSION, the
-- deployed code's hash) that first saw the key, written when the row is inserted and never changed after;
-- `worker_inbox.attempt_history` holds the key's last attempts (at most ATTEMPT_HISTORY_LIMIT, 20: time, outcome,
-- failure code, worker version, SQS message id, attempt and receive count), oldest first, appended by the statement
-- that records the failure or the completion. `worker_quarantine.worker_version` is the version that quarantined
-- the message (last time).
--
-- Nullable columns, and a constant default for the history: PostgreSQL 11 and later add them without rewriting the
-- table. Rows written before this migration have no first version (null: "unknown") and an empty history.
alter table worker_inbox
  add column first_version varchar(64),
  add column attempt_history jsonb not null default '[]'::jsonb;

alter table worker_quarantine add column worker_version varchar(64);
