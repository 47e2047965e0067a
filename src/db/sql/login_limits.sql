-- What decides whether the client and server logins can take the connection slots the
-- daemon needs (src/db/login_limits.rs): the cluster's slot settings, the daemon's own
-- login, and every login in matchmaker_client or matchmaker_server with its
-- CONNECTION LIMIT (-1: none). Connection slots belong to the cluster, so every login
-- counts, whichever database it uses.
WITH groups AS (
    -- Missing before the first migration: then no login is a member of them.
    SELECT oid FROM pg_roles WHERE rolname IN ('matchmaker_client', 'matchmaker_server')
), logins AS (
    SELECT r.rolname::text AS login, r.rolconnlimit AS conn_limit
      FROM pg_roles r
     WHERE r.rolcanlogin
       -- A superuser is the operator's; PostgreSQL keeps slots for superusers apart.
       AND NOT r.rolsuper
       -- MEMBER, not USAGE: a login granted the group WITH INHERIT FALSE, or through a
       -- NOINHERIT role, still connects and calls the API after SET ROLE. Directly or
       -- through other roles.
       AND EXISTS (SELECT 1 FROM groups g WHERE pg_has_role(r.oid, g.oid, 'MEMBER'))
)
SELECT current_setting('server_version_num')::int AS server_version,
       current_setting('max_connections')::int AS max_connections,
       current_setting('superuser_reserved_connections')::int AS superuser_reserved,
       -- PostgreSQL 16 and later; unknown (NULL) before.
       coalesce(current_setting('reserved_connections', true)::int, 0) AS reserved,
       session_user::text AS daemon_login,
       -- The server admits a session to the reserved slots by the privileges of
       -- pg_use_reserved_connections (inherited membership, as USAGE asks). The role
       -- exists from PostgreSQL 16 on.
       coalesce((SELECT pg_has_role(session_user, u.oid, 'USAGE')
                   FROM pg_roles u WHERE u.rolname = 'pg_use_reserved_connections'),
                false) AS daemon_uses_reserved,
       ARRAY(SELECT login FROM logins ORDER BY login) AS logins,
       ARRAY(SELECT conn_limit FROM logins ORDER BY login) AS limits
