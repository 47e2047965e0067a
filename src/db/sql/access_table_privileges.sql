-- The current login (session_user, also under SET ROLE), whether it is a member of
-- matchmaker_client (false when the role does not exist), and the tables of $1 that exist
-- and that the login may not use with privilege $2, in the order asked.
-- $1 = table names, $2 = the privilege (SELECT or DELETE).
SELECT session_user::text AS login,
       coalesce((SELECT pg_has_role(r.oid, 'USAGE') FROM pg_roles r
                  WHERE r.rolname = 'matchmaker_client'), false) AS client,
       ARRAY(SELECT t.name FROM unnest($1::text[]) WITH ORDINALITY AS t(name, i)
              WHERE to_regclass(t.name) IS NOT NULL
                AND NOT has_table_privilege(to_regclass(t.name), $2)
              ORDER BY t.i) AS unreadable
