-- Example domain used by the deployable worker (lambda/domain).
create table cases (
  case_id text primary key,
  stage text not null,
  version integer not null,
  deadline_at timestamptz,
  deadline_version integer not null default 0
);

create table case_deadlines (
  case_id text not null references cases (case_id),
  deadline_type text not null,
  deadline_at timestamptz not null,
  source_event_id text not null,
  updated_at timestamptz not null default now(),
  primary key (case_id, deadline_type)
);

create table ledger_entries (
  entry_id text primary key,
  account_id text not null,
  amount numeric not null,
  currency text not null,
  source_event_id text not null unique,
  created_at timestamptz not null default now()
);
