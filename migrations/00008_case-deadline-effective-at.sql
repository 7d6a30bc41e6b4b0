-- Example domain: the effective time of the deadline a case holds, so that an older deadline request (a reordered
-- or released message) never replaces a newer one (lambda/domain/case-deadline-calculation-requested.ts).
alter table cases add column deadline_effective_at timestamptz;
