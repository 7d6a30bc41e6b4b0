-- Trace context of a message, from producer to effect (docs/tracing.md). `outbox_events.trace_header` is the
-- X-Ray trace header (`Root=1-…;Parent=…;Sampled=0|1`) enqueueOutbox takes from the producer (or makes), and the
-- relay sends as the SQS AWSTraceHeader and as a W3C traceparent message attribute; `worker_inbox.trace_id` is
-- the trace id (`1-…-…`) the claim read from the delivery, kept once the row is COMPLETED. Nullable, no default:
-- adding them rewrites nothing, and rows written before this migration simply have none.
alter table outbox_events add column trace_header varchar(256);

alter table worker_inbox add column trace_id varchar(35);
