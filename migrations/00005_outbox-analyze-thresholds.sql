-- The relay's claim takes the oldest due PENDING rows (order by sequence limit n) and checks each for an older
-- PENDING row of its aggregate. Its plan follows how many PENDING rows the statistics say there are. When they
-- say almost none and there are many — a backlog that built up since the last analyze, for example while SQS was
-- unavailable — PostgreSQL checks every pending row for each claimed one: measured 250 ms per round of 50 at
-- 20,000 pending rows on a table of 200,000 analyzed with none pending, 1 ms once an analyze had seen 3,000 of
-- them. By default autovacuum re-analyzes after 10 % of the table changed, so the larger the outbox, the larger
-- the backlog the relay is slow on; here it re-analyzes after 1,000 changes plus 1 % of the table.
alter table outbox_events set (autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000);
