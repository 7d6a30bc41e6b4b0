-- Duplicates told apart (docs/operations.md "Duplicates: redelivery or resend"). A claim that finds its key
-- COMPLETED with the same request counts the copy on the row, in the claim statement itself: a REDELIVERY when
-- the delivery's SQS messageId is the row's last_message_id (the same message again: a visibility timeout that
-- ran out, a crash between commit and delete), a RESEND when it is another messageId (the producer sent again).
-- last_duplicate_kind is the kind of the latest such copy, which the claim returns to the worker for its metric.
-- Defaults of 0 and a nullable column: adding them rewrites nothing (PostgreSQL 11+ keeps a constant default in
-- the catalog), and rows written before this migration count from zero.
alter table worker_inbox add column redelivery_count integer not null default 0;

alter table worker_inbox add column resend_count integer not null default 0;

alter table worker_inbox add column last_duplicate_kind varchar(10);
