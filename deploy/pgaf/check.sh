#!/usr/bin/env bash
# Runs deploy/pgaf/start.sh as deploy/compose.ha.yaml does, without containers: a
# monitor and two PostgreSQL nodes on 127.0.0.1, each with its own port and directory.
# Then checks what the compose formation promises: the nodes become primary and
# synchronous standby, the matchmaker's logins work over TLS on the multi-host URL
# (`migrate` as the schema owner, `status` as an ops login on the standby), the daemon's
# login commits synchronously, and after a switchover the same URL reaches the new
# primary. CI runs it (.ci/run); it needs pg_autoctl (postgresql-15-auto-failover).
#
#   bash deploy/pgaf/check.sh target/release/matchmaker
set -euo pipefail
trap 'echo "deploy/pgaf/check.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR
matchmaker="$(realpath "${1:?path to the matchmaker binary}")"
here="$(cd "$(dirname "$0")" && pwd)"
command -v pg_autoctl >/dev/null || {
  echo "pg_autoctl not found: apt-get install -y postgresql-15-auto-failover" >&2
  exit 1
}
bin="$(dirname "$(readlink -f "$(command -v pg_autoctl)")")"
pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
[ -x "$bin/pg_ctl" ] && pg_bin="$bin"

dir="$(mktemp -d /tmp/pgaf-check.XXXXXX)"
chmod 755 "$dir"
user=postgres
[ "$(id -u)" = 0 ] || user="$(id -un)"
chown "$user" "$dir"
# Three consecutive ports nothing listens on.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 1 50); do
  base=$((20000 + RANDOM % 20000))
  in_use "$base" || in_use $((base + 1)) || in_use $((base + 2)) || break
done
ports=("$base" $((base + 1)) $((base + 2)))
pids=()
keep=
# Each member is its own process group (setsid): its keeper and PostgreSQL stop with it.
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 30); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  # pg_ctl starts PostgreSQL in a session of its own; a keeper that did not stop it
  # leaves it running.
  for data in "$dir"/*/data; do
    [ -f "$data/postmaster.pid" ] && as_user "$pg_bin/pg_ctl" -D "$data" stop -m immediate >/dev/null 2>&1
  done
  if [ -n "$keep" ]; then echo "logs and data kept in $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT

as_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}
member() { # name kind port
  # pg_autoctl creates its config directories itself, and two pg_autoctl processes
  # doing so at once (`show state` beside `create`) fail on each other's directory.
  mkdir -p "$dir/$1/config" "$dir/$1/share"
  chown -R "$user" "$dir/$1"
  setsid bash -c 'if [ "$(id -u)" = 0 ]; then exec runuser -u "$0" -- "$@"; else exec "$@"; fi' \
    "$user" env PATH="$pg_bin:/usr/bin:/bin" HOME="$dir/$1" \
    XDG_CONFIG_HOME="$dir/$1/config" XDG_DATA_HOME="$dir/$1/share" \
    PGDATA="$dir/$1/data" PGPORT="$3" PGAF_KIND="$2" PGAF_HOSTNAME=127.0.0.1 \
    PGAF_MONITOR="127.0.0.1:${ports[0]}" PGAF_AUTOCTL_NODE_PASSWORD=autoctl-local \
    PGAF_REPLICATION_PASSWORD=replication-local PGAF_INITDB="$here/../initdb" \
    bash "$here/start.sh" >"$dir/$1.log" 2>&1 &
  pids+=($!)
}
autoctl() { # member args...
  local m="$1"
  shift
  as_user env XDG_CONFIG_HOME="$dir/$m/config" XDG_DATA_HOME="$dir/$m/share" \
    pg_autoctl "$@" --pgdata "$dir/$m/data"
}
fail() {
  keep=1
  echo "deploy/pgaf/check.sh: $*" >&2
  for m in monitor node1 node2; do
    echo "--- $m.log (last lines)" >&2
    tail -n 15 "$dir/$m.log" >&2 || true
  done
  exit 1
}
states() { autoctl monitor show state 2>/dev/null | awk -F'|' 'NR > 2 && $6 != "" { gsub(/ /, ""); print $6 }' | sort | tr '\n' ' '; }
wait_for_states() { # seconds
  for _ in $(seq 1 "$1"); do
    [ "$(states)" = "primary secondary " ] && return 0
    # pg_basebackup waits for a spread checkpoint on the primary (minutes on an idle
    # server); ask for it now.
    for p in "${ports[1]}" "${ports[2]}"; do
      as_user psql -X -q -h /var/run/postgresql -p "$p" -d postgres -c CHECKPOINT >/dev/null 2>&1 || true
    done
    sleep 1
  done
  fail "the formation is not primary and secondary after $1 s: $(states)"
}

member monitor monitor "${ports[0]}"
for _ in $(seq 1 60); do
  grep -q "start.sh: the monitor is ready" "$dir/monitor.log" && break
  sleep 1
done
grep -q "start.sh: the monitor is ready" "$dir/monitor.log" || fail "the monitor is not ready after 60 s"
member node1 postgres "${ports[1]}"
for _ in $(seq 1 60); do
  [ "$(states)" = "single " ] && break
  sleep 1
done
member node2 postgres "${ports[2]}"
wait_for_states 180
echo "formation: primary and secondary"

url() { # login password [attrs]
  echo "postgres://$1:$2@127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/matchmaker?target_session_attrs=${3:-read-write}&sslmode=require"
}
for _ in $(seq 1 30); do
  grep -q "roles and logins are created" "$dir/node1.log" "$dir/node2.log" && break
  sleep 1
done
grep -q "roles and logins are created" "$dir/node1.log" "$dir/node2.log" ||
  fail "no node created the matchmaker's roles"

DATABASE_URL="$(url matchmaker_owner owner-local)" "$matchmaker" migrate >"$dir/migrate.log" 2>&1 ||
  { cat "$dir/migrate.log" >&2; fail "migrate as the schema owner on the multi-host URL failed"; }
echo "migrate as matchmaker_owner over TLS: ok"

standby_url="postgres://mm_ops:ops-local@127.0.0.1:${ports[2]}/matchmaker?sslmode=require"
for _ in $(seq 1 30); do
  DATABASE_URL="$standby_url" "$matchmaker" status --once >"$dir/status.log" 2>&1 && break
  sleep 1
done
DATABASE_URL="$standby_url" "$matchmaker" status --once >"$dir/status.log" 2>&1 ||
  { cat "$dir/status.log" >&2; fail "status as mm_ops on the standby failed"; }
echo "status as mm_ops on the standby: ok"

daemon_sql() { psql -X -At "$(url mm_daemon daemon-local)" -c "$1" 2>&1 || fail "as mm_daemon: $1"; }
sync=$(daemon_sql "SHOW synchronous_commit")
standbys=$(daemon_sql "SHOW synchronous_standby_names")
[ "$sync" = on ] && [ -n "$standbys" ] ||
  fail "mm_daemon commits with synchronous_commit=$sync, synchronous_standby_names='$standbys'"
echo "mm_daemon: synchronous_commit=on, synchronous_standby_names=$standbys"

primary_before=$(daemon_sql "SELECT inet_server_port()")
autoctl monitor perform switchover --formation default >/dev/null 2>&1 || fail "switchover failed"
wait_for_states 120
primary_after=$(daemon_sql "SELECT inet_server_port()")
[ "$primary_before" != "$primary_after" ] || fail "the primary is still on port $primary_before"
DATABASE_URL="$(url matchmaker_owner owner-local)" "$matchmaker" migrate >"$dir/migrate.log" 2>&1 ||
  { cat "$dir/migrate.log" >&2; fail "migrate after the switchover failed"; }
echo "after a switchover (primary port $primary_before -> $primary_after): migrate ok"
echo "formation check passed"
