-- Run once by the PostgreSQL image on an empty data directory, as its superuser: the
-- only step that needs one. Everything after runs as a least-privilege login.
--
-- The three group roles are created here, so the schema owner needs no CREATEROLE: it
-- migrates, owns the tables and functions, and nothing more. Each process then logs in
-- as a member of the group role it needs. The passwords are for this local stack only;
-- a deployment sets its own (deploy/README.md, "Database roles").

CREATE ROLE matchmaker_client NOLOGIN;
CREATE ROLE matchmaker_daemon NOLOGIN;
CREATE ROLE matchmaker_ops NOLOGIN;
CREATE ROLE matchmaker_server NOLOGIN;

CREATE ROLE matchmaker_owner LOGIN PASSWORD 'owner-local';
CREATE DATABASE matchmaker OWNER matchmaker_owner;

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
-- PostgreSQL 17: a transaction kept busy by short statements is never idle in it.
ALTER ROLE mm_backend SET transaction_timeout = '30s';
ALTER ROLE mm_server SET transaction_timeout = '30s';

-- Large objects: nothing in the matchmaker uses them, and nothing bounds their size. The
-- migration revokes them in the matchmaker's database when it runs as a superuser; here
-- the superuser does it for the database the owner migrates.
\connect matchmaker
REVOKE EXECUTE ON FUNCTION lo_create(oid), lo_creat(integer), lo_import(text),
    lo_import(text, oid), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lowrite(integer, bytea), lo_open(oid, integer), lo_unlink(oid) FROM PUBLIC;
