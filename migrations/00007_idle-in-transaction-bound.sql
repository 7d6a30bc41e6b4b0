-- A session left idle inside a transaction holds its row locks and its connection until it ends. The worker rolls
-- back a record whose handler outlives its budget, but nothing in the engine can end a transaction whose client
-- went away (a frozen Lambda environment, a killed process). Every new session of this database (worker, relay,
-- ops) ends such a transaction after 60 s idle, as the deployed parameter group does for the whole server: this
-- bound also holds for local runs, SAM and a server of your own. Sessions open while this runs keep their setting.
do $$
begin
  execute format('alter database %I set idle_in_transaction_session_timeout = %L', current_database(), '60s');
exception when insufficient_privilege then
  raise warning 'idle_in_transaction_session_timeout not set for database %: only its owner or a superuser can; set it yourself (alter database % set idle_in_transaction_session_timeout = ''60s'')', current_database(), current_database();
end
$$;
