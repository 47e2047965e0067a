-- The matchmaker's database, owned by the schema owner. On a pg_auto_failover formation
-- pg_autoctl creates the database and deploy/pgaf/start.sh hands it to the owner instead.
CREATE DATABASE matchmaker OWNER matchmaker_owner;
