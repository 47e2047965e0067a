-- Run once, as a superuser: by the PostgreSQL image on an empty data directory (with
-- 20- and 30-, in that order), or on a pg_auto_failover formation's primary by
-- deploy/pgaf/start.sh. It is the only step that needs a superuser; everything after runs
-- as a least-privilege login.
--
-- The group roles are created here, so the schema owner needs no CREATEROLE: it
-- migrates, owns the tables and functions, and nothing more. Each process then logs in
-- as a member of the group role it needs. The passwords are for this local stack only;
-- a deployment sets its own (deploy/README.md, "Database roles").

CREATE ROLE matchmaker_client NOLOGIN;
CREATE ROLE matchmaker_daemon NOLOGIN;
CREATE ROLE matchmaker_ops NOLOGIN;
CREATE ROLE matchmaker_server NOLOGIN;

CREATE ROLE matchmaker_owner LOGIN PASSWORD 'owner-local';

CREATE ROLE mm_daemon  LOGIN PASSWORD 'daemon-local'  IN ROLE matchmaker_daemon;
CREATE ROLE mm_ops     LOGIN PASSWORD 'ops-local'     IN ROLE matchmaker_ops;
CREATE ROLE mm_backend LOGIN PASSWORD 'backend-local' IN ROLE matchmaker_client;
CREATE ROLE mm_server  LOGIN PASSWORD 'server-local'  IN ROLE matchmaker_server;

-- Client and server logins, bounded one by one (a group role's settings do not reach its
-- members): docs/operations.md, "Bounding client logins".
ALTER ROLE mm_backend CONNECTION LIMIT 20;
ALTER ROLE mm_backend SET statement_timeout = '5s';
ALTER ROLE mm_backend SET idle_in_transaction_session_timeout = '10s';
ALTER ROLE mm_server CONNECTION LIMIT 10;
ALTER ROLE mm_server SET statement_timeout = '5s';
ALTER ROLE mm_server SET idle_in_transaction_session_timeout = '10s';
-- PostgreSQL 17 and later: a transaction kept busy by short statements is never idle in
-- it. (A formation's nodes may run an older major: deploy/pgaf/.)
SELECT current_setting('server_version_num')::int >= 170000 AS has_transaction_timeout \gset
\if :has_transaction_timeout
ALTER ROLE mm_backend SET transaction_timeout = '30s';
ALTER ROLE mm_server SET transaction_timeout = '30s';
\endif

-- Synchronous commit for the daemon (the server's default; kept on should the default
-- be lowered): on a formation a committed match is on the standby before the round's
-- commit returns (deploy/README.md, "High availability").
ALTER ROLE mm_daemon SET synchronous_commit = on;
