-- An external effect belongs to one consumer: two workers that share this database and receive the same message
-- (a fan-out) each cause their own effect. Effect keys are now `<consumer>/<operation>:<idempotency key>`
-- (lambda/effects/effect-key.ts), hashed past 200 characters exactly as below.
--
-- The key the provider deduplicates on must not change for an effect already requested: a PENDING row retried
-- under a new key could be applied twice. So the provider's key gets a column of its own, and rows rewritten
-- here keep the key they were sent with.
alter table external_effect_log add column provider_key varchar(300);
update external_effect_log set provider_key = effect_key;
alter table external_effect_log alter column provider_key set not null;

-- The example domain's notifications follow their effect's key.
alter table case_notifications drop constraint case_notifications_effect_key_fkey;
alter table case_notifications
  add constraint case_notifications_effect_key_fkey
  foreign key (effect_key) references external_effect_log (effect_key) on update cascade;

-- Existing rows get the consumer of the inbox row that caused them, when exactly one consumer has that message.
-- A row claimed by several consumers (the effect the others never got) or by none keeps its key: a retry of it
-- starts a new effect under the new key.
with legacy as (
  select effect_key, operation,
         case when substr(effect_key, length(operation) + 2, 7) = 'sha256:'
              then null else substr(effect_key, length(operation) + 2) end as idempotency_key,
         case when substr(effect_key, length(operation) + 2, 7) = 'sha256:'
              then substr(effect_key, length(operation) + 9) end as key_hash
  from external_effect_log
  where left(effect_key, length(operation) + 1) = operation || ':'
),
-- Two equality joins (each a hash join: the inbox is read once, and not at all for an empty side).
matches as (
  select l.effect_key, l.operation, i.consumer, i.idempotency_key
  from legacy l join worker_inbox i on i.idempotency_key = l.idempotency_key
  union all
  select l.effect_key, l.operation, i.consumer, i.idempotency_key
  from legacy l join worker_inbox i on encode(sha256(convert_to(i.idempotency_key, 'UTF8')), 'hex') = l.key_hash
),
owners as (
  select effect_key, operation, min(consumer) as consumer, min(idempotency_key) as idempotency_key
  from matches
  group by effect_key, operation
  having count(distinct consumer) = 1
),
renamed as (
  select effect_key,
         case when length(consumer || '/' || operation || ':' || idempotency_key) <= 200
              then consumer || '/' || operation || ':' || idempotency_key
              else left(consumer || '/' || operation, 128) || ':sha256:'
                   || encode(sha256(convert_to(consumer || '/' || operation || ':' || idempotency_key, 'UTF8')), 'hex')
         end as new_key
  from owners
)
update external_effect_log e
set effect_key = r.new_key
from renamed r
where e.effect_key = r.effect_key;
