#!/usr/bin/env bash
# One member of a pg_auto_failover formation (a monitor, or a PostgreSQL node that the
# monitor makes the primary or its synchronous standby), as deploy/compose.ha.yaml runs
# it. Safe to run again on the same data directory: pg_autoctl resumes where it stopped.
#
# Authentication is scram-sha-256 everywhere and the connections are encrypted
# (self-signed certificates: encryption, not identity; deploy/README.md says how to use
# your own). pg_autoctl sets no passwords itself; this script does, and on whichever node
# is the primary it creates the matchmaker's roles and logins once (deploy/initdb/).
#
# Environment:
#   PGAF_KIND                   monitor | postgres
#   PGDATA, PGPORT              data directory, port (default /var/lib/pgaf/data, 5432)
#   PGAF_HOSTNAME               the name the other members reach this one by
#   PGAF_MONITOR                the monitor's host:port (postgres nodes)
#   PGAF_AUTOCTL_NODE_PASSWORD  the keepers' login on the monitor (autoctl_node)
#   PGAF_REPLICATION_PASSWORD   the standby's replication login (pgautofailover_replicator)
#   PGAF_INITDB                 directory of the roles' SQL (default /etc/pgaf/initdb)
#   PGAF_SOCKET_DIR             the server's unix socket (default /var/run/postgresql)
set -euo pipefail

: "${PGAF_KIND:?monitor or postgres}"
: "${PGAF_HOSTNAME:?the name the other members reach this one by}"
: "${PGAF_AUTOCTL_NODE_PASSWORD:?the autoctl_node password}"
export PGDATA="${PGDATA:-/var/lib/pgaf/data}"
export PGPORT="${PGPORT:-5432}"
initdb_sql="${PGAF_INITDB:-/etc/pgaf/initdb}"
socket_dir="${PGAF_SOCKET_DIR:-/var/run/postgresql}"

# Passwords reach pg_autoctl (libpq) through a password file, not its config or the
# command line. Replication connections match the database field "replication".
export PGPASSFILE="${PGDATA%/*}/.pgpass.$PGAF_KIND"
umask 077
{
  echo "*:*:pg_auto_failover:autoctl_node:$PGAF_AUTOCTL_NODE_PASSWORD"
  [ -z "${PGAF_REPLICATION_PASSWORD:-}" ] ||
    echo "*:*:replication:pgautofailover_replicator:$PGAF_REPLICATION_PASSWORD"
} >"$PGPASSFILE"

# Local administration goes through the unix socket as the OS user that owns the data
# directory: the initial superuser, trusted on the socket only.
local_psql() {
  psql -X -v ON_ERROR_STOP=1 -q -At -h "$socket_dir" -p "$PGPORT" -U "$(id -un)" "$@"
}

if [ "$PGAF_KIND" = monitor ]; then
  pg_autoctl create monitor --pgdata "$PGDATA" --pgport "$PGPORT" \
    --hostname "$PGAF_HOSTNAME" --auth scram-sha-256 --ssl-self-signed \
    --pgctl "$(command -v pg_ctl)" --run &
else
  : "${PGAF_MONITOR:?host:port of the monitor}"
  : "${PGAF_REPLICATION_PASSWORD:?the replication password}"
  pg_autoctl create postgres --pgdata "$PGDATA" --pgport "$PGPORT" \
    --hostname "$PGAF_HOSTNAME" --dbname matchmaker --auth scram-sha-256 \
    --ssl-self-signed --pg-hba-lan --pgctl "$(command -v pg_ctl)" \
    --monitor "postgres://autoctl_node@$PGAF_MONITOR/pg_auto_failover?sslmode=require" --run &
fi
keeper=$!
trap 'kill -TERM "$keeper" 2>/dev/null; wait "$keeper"' TERM INT

# A standby answers once pg_basebackup has cloned the primary.
until local_psql -d postgres -c 'SELECT 1' >/dev/null 2>&1; do
  kill -0 "$keeper" 2>/dev/null || { wait "$keeper"; exit $?; }
  sleep 1
done

# A password goes through psql's stdin and a variable, quoted by psql.
set_password() { # role database password
  echo "ALTER ROLE $1 PASSWORD :'password'" | local_psql -d "$2" -v password="$3"
}

if [ "$PGAF_KIND" = monitor ]; then
  set_password autoctl_node pg_auto_failover "$PGAF_AUTOCTL_NODE_PASSWORD"
  echo "start.sh: the monitor is ready" >&2
else
  # The matchmaker's logins, over TLS with a password from the nodes' network
  # (--pg-hba-lan admits only pg_autoctl's own user). Kept on every start: a node cloned
  # or rewound from the other one has that one's file.
  hba="hostssl matchmaker all samenet scram-sha-256"
  if ! grep -qxF "$hba" "$PGDATA/pg_hba.conf"; then
    echo "$hba" >>"$PGDATA/pg_hba.conf"
    local_psql -d postgres -c 'SELECT pg_reload_conf()' >/dev/null
  fi
  # Whichever node is the primary creates what is missing; the standby waits its turn,
  # as what is done on a primary reaches the standby through the WAL. pg_autoctl creates
  # its replication login soon after the server first answers: wait for it too.
  primary_ready() {
    [ "$(local_psql -d postgres -c "SELECT NOT pg_is_in_recovery() AND EXISTS
          (SELECT 1 FROM pg_roles WHERE rolname = 'pgautofailover_replicator')" 2>/dev/null)" = t ]
  }
  create_roles() {
    set_password pgautofailover_replicator postgres "$PGAF_REPLICATION_PASSWORD" || return 1
    [ "$(local_psql -d postgres -c "SELECT count(*) FROM pg_roles WHERE rolname = 'matchmaker_owner'")" = 0 ] ||
      return 0
    local_psql -d postgres -f "$initdb_sql/10-roles.sql" || return 1
    local_psql -d postgres -c 'ALTER DATABASE matchmaker OWNER TO matchmaker_owner' || return 1
    local_psql -d postgres -f "$initdb_sql/30-large-objects.sql" || return 1
    echo "start.sh: the matchmaker's roles and logins are created" >&2
  }
  while kill -0 "$keeper" 2>/dev/null; do
    if primary_ready; then
      create_roles && break
      echo "start.sh: creating the matchmaker's roles failed; trying again" >&2
    fi
    sleep 3
  done
fi
wait "$keeper"
