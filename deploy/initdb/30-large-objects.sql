-- Large objects: nothing in the matchmaker uses them, and nothing bounds their size. The
-- migration revokes them in the matchmaker's database when it runs as a superuser; here
-- the superuser does it for the database the owner migrates.
\connect matchmaker
REVOKE EXECUTE ON FUNCTION lo_create(oid), lo_creat(integer), lo_import(text),
    lo_import(text, oid), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lowrite(integer, bytea), lo_open(oid, integer), lo_unlink(oid) FROM PUBLIC;
