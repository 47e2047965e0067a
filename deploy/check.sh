#!/usr/bin/env bash
# Builds the images and starts deploy/compose.yaml, then checks what the compose file
# promises: the replicas become healthy, a round commits under the simulated load (the
# simulated players enqueue as the client login), an ops login reads the status, and no
# matchmaker process is connected as a superuser.
# Needs a container engine with the compose plugin (`docker compose version`); exits 2
# with a message where there is none. Tears the stack down (volumes too) at the end.
#
#   bash deploy/check.sh
set -euo pipefail
cd "$(dirname "$0")"

if ! docker compose version >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "deploy/check.sh needs a running container engine with the compose plugin" >&2
  echo "(docker compose version, docker info); nothing was checked" >&2
  exit 2
fi

compose() { docker compose -f compose.yaml --profile demo "$@"; }
psql_super() { compose exec -T postgres psql -U postgres -d matchmaker -Atc "$1"; }
trap 'compose down --volumes --remove-orphans >/dev/null 2>&1 || true' EXIT

compose build
compose up -d postgres migrate matchmaker-a matchmaker-b

echo "waiting for both replicas to be healthy"
for _ in $(seq 1 90); do
  healthy=$(compose ps --format '{{.Service}} {{.Health}}' | grep -c ' healthy$' || true)
  [ "$healthy" -ge 2 ] && break
  sleep 2
done
[ "$healthy" -ge 2 ] || { compose ps; compose logs --tail 50; echo "replicas not healthy" >&2; exit 1; }

compose up -d simulate
echo "waiting for a committed round"
for _ in $(seq 1 120); do
  matches=$(psql_super "SELECT count(*) FROM matches")
  [ "$matches" -gt 0 ] && break
  sleep 5
done
[ "$matches" -gt 0 ] || { compose logs --tail 50; echo "no match committed in 10 minutes" >&2; exit 1; }
echo "matches committed: $matches"
backend=$(psql_super "SELECT count(*) FROM queue_entries WHERE owner = 'mm_backend'")
[ "$backend" -gt 0 ] || { compose logs --tail 50 simulate; echo "no entry of the client login mm_backend" >&2; exit 1; }
echo "simulated players enqueued as the client login mm_backend: $backend"

compose exec -T -e DATABASE_URL=postgres://mm_ops:ops-local@postgres:5432/matchmaker \
  matchmaker-a matchmaker status --once >/dev/null
echo "status as an ops login: ok"

supers=$(psql_super "SELECT count(*) FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
                     WHERE a.datname = 'matchmaker' AND r.rolsuper AND a.pid <> pg_backend_pid()")
[ "$supers" -eq 0 ] || { echo "$supers superuser connections besides this check" >&2; exit 1; }
echo "no superuser connection: ok"
echo "deploy check passed"
