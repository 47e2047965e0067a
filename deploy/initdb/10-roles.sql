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

CREATE ROLE matchmaker_owner LOGIN PASSWORD 'owner-local';
CREATE DATABASE matchmaker OWNER matchmaker_owner;

CREATE ROLE mm_daemon  LOGIN PASSWORD 'daemon-local'  IN ROLE matchmaker_daemon;
CREATE ROLE mm_ops     LOGIN PASSWORD 'ops-local'     IN ROLE matchmaker_ops;
CREATE ROLE mm_backend LOGIN PASSWORD 'backend-local' IN ROLE matchmaker_client;
