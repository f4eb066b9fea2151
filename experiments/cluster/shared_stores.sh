#!/usr/bin/env bash
# The stores a campaign's jobs share on a cluster: PostgreSQL (Debian's package) holding Optuna's studies and the
# MLflow tracking server's runs, and an MLflow tracking server in front of it that keeps the artifacts.
#   bash experiments/cluster/shared_stores.sh start    # install PostgreSQL if missing, create, start, wait
#   bash experiments/cluster/shared_stores.sh status   # whether both answer
#   bash experiments/cluster/shared_stores.sh stop     # stop the tracking server and PostgreSQL
# start writes the workflow settings that select them to $RL_STORES_DIR/stores.yaml (mode 600: it holds the
# database password): `snakemake --configfile $RL_STORES_DIR/stores.yaml --profile experiments/profiles/slurm ...`.
# Idempotent: start on running stores only checks them. Run it with the project's Python environment active (the
# tracking server is its MLflow; PostgreSQL's driver is the `cluster` extra's psycopg2).
# Settings (environment): RL_STORES_DIR (default /var/lib/rl-harness-stores as root, else
# ~/.local/state/rl-harness-stores), RL_STORES_HOST (the name jobs reach this machine by and the address both
# listen on; default localhost, i.e. one machine), RL_STORES_PG_PORT (5433), RL_STORES_MLFLOW_PORT (5000),
# RL_STORES_WORKERS (the tracking server's worker processes, 4), RL_STORES_HEALTHCHECK_S (how long the server's
# supervisor waits for a busy worker to answer before it kills it, and the requests it is serving: 120; uvicorn's own
# 5 s kills workers of a machine that a burst of jobs keeps busy).
set -euo pipefail

action=${1:-}
fail() { echo "error: $*" >&2; exit 2; }
[ "$action" = start ] || [ "$action" = stop ] || [ "$action" = status ] || fail "usage: $0 start|stop|status"

if [ "$(id -u)" = 0 ]; then dir=${RL_STORES_DIR:-/var/lib/rl-harness-stores}
else dir=${RL_STORES_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/rl-harness-stores}; fi
host=${RL_STORES_HOST:-localhost}
pg_port=${RL_STORES_PG_PORT:-5433}
mlflow_port=${RL_STORES_MLFLOW_PORT:-5000}
workers=${RL_STORES_WORKERS:-4}
healthcheck=${RL_STORES_HEALTHCHECK_S:-120}
user=rl_harness
tracking="http://$host:$mlflow_port"
for setting in RL_STORES_WORKERS:$workers RL_STORES_HEALTHCHECK_S:$healthcheck; do
  [[ ${setting#*:} =~ ^[1-9][0-9]*$ ]] || fail "${setting%%:*} must be a positive whole number, not '${setting#*:}'"
done

# PostgreSQL refuses to run as root: as root its files belong to, and its server runs as, the postgres account.
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
tracking_up() { python - "$tracking" <<'PY'
import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[1] + "/health", timeout=10).read().strip() == b"OK" else 1)
except OSError:
    sys.exit(1)
PY
}
database_up() { [ -n "$(pg_bin)" ] && "$(pg_bin)/pg_isready" -q -h "$host" -p "$pg_port"; }

if [ "$action" = status ]; then
  database_up && echo "PostgreSQL answers on $host:$pg_port" || fail "PostgreSQL does not answer on $host:$pg_port"
  tracking_up && echo "the MLflow tracking server answers at $tracking" || fail "no MLflow tracking server at $tracking"
  exit 0
fi

if [ "$action" = stop ]; then
  if [ -f "$dir/mlflow.pid" ]; then
    kill -- "-$(cat "$dir/mlflow.pid")" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$(cat "$dir/mlflow.pid")" 2>/dev/null || break; sleep 0.2; done
    rm -f "$dir/mlflow.pid"
  fi
  if [ -n "$(pg_bin)" ] && [ -f "$dir/postgres/postmaster.pid" ]; then
    as_owner "$(pg_bin)/pg_ctl" -D "$dir/postgres" -m fast -w stop >/dev/null
  fi
  exit 0
fi

command -v python >/dev/null && python -c "import mlflow, psycopg2" 2>/dev/null \
  || fail "the project's Python environment with the cluster extra (mlflow, psycopg2) is not active: pip install -e '.[cluster]'"
if [ -z "$(pg_bin)" ]; then
  [ "$(id -u)" = 0 ] || fail "PostgreSQL is not installed; as root this script installs Debian's postgresql package"
  command -v apt-get >/dev/null || fail "PostgreSQL is not installed and there is no apt-get to install it"
  apt-get install -y -qq postgresql >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; } \
    || fail "could not install Debian's postgresql package"
fi
bin=$(pg_bin)

mkdir -p "$dir/artifacts"
chmod 711 "$dir"
if [ ! -s "$dir/password" ]; then
  (umask 077 && python -c "import secrets; print(secrets.token_hex(16))" > "$dir/password")
fi
password=$(cat "$dir/password")
if [ ! -f "$dir/postgres/PG_VERSION" ]; then
  mkdir -p "$dir/postgres"
  pwfile=$(mktemp)
  echo "$password" > "$pwfile"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir/postgres" "$pwfile"; fi
  as_owner "$bin/initdb" -D "$dir/postgres" -U "$user" --pwfile="$pwfile" --auth=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  # Jobs on other machines of the cluster log in with the password too.
  [ "$host" = localhost ] || echo "host all $user samenet scram-sha-256" >> "$dir/postgres/pg_hba.conf"
fi
if ! database_up; then
  as_owner "$bin/pg_ctl" -D "$dir/postgres" -l "$dir/postgres/server.log" -w \
    -o "-p $pg_port -k /tmp -c listen_addresses=$host -c max_connections=300" start >/dev/null \
    || fail "PostgreSQL did not start (log: $dir/postgres/server.log)"
fi
for database in mlflow optuna; do
  PGPASSWORD=$password "$bin/psql" -h "$host" -p "$pg_port" -U "$user" -d postgres -tAq \
    -c "SELECT 1 FROM pg_database WHERE datname = '$database'" | grep -q 1 \
    || PGPASSWORD=$password "$bin/createdb" -h "$host" -p "$pg_port" -U "$user" "$database"
done

database="postgresql://$user:$password@$host:$pg_port"
if ! tracking_up; then
  # Its own process group, so that stop ends the server and its workers together.
  setsid python -m mlflow server --backend-store-uri "$database/mlflow" --artifacts-destination "$dir/artifacts" \
    --host "$host" --port "$mlflow_port" --workers "$workers" \
    --uvicorn-opts "--timeout-worker-healthcheck $healthcheck" --allowed-hosts "$host,$host:$mlflow_port" \
    > "$dir/mlflow.log" 2>&1 < /dev/null &
  echo $! > "$dir/mlflow.pid"
  # One answer is enough: a second request may meet a worker still starting up, slower than its timeout.
  deadline=$((SECONDS + 180))
  until tracking_up; do
    [ $SECONDS -lt $deadline ] || fail "the MLflow tracking server did not answer within 3 minutes (log: $dir/mlflow.log)"
    sleep 0.2
  done
fi

(umask 077 && cat > "$dir/stores.yaml" <<YAML
# Written by experiments/cluster/shared_stores.sh: the shared stores as workflow settings (--configfile this file).
tracking:
  uri: $tracking
sweeps:
  storage: $database/optuna
YAML
)
echo "PostgreSQL on $host:$pg_port, the MLflow tracking server at $tracking; settings in $dir/stores.yaml"
