#!/usr/bin/env bash
# A one-node SLURM on this machine, for tests and trials of the SLURM profile (experiments/profiles/slurm):
#   bash experiments/cluster/one_node_slurm.sh start    # install Debian's SLURM and MariaDB if missing, configure, start, wait
#   bash experiments/cluster/one_node_slurm.sh status   # the node's state, as sinfo reports it
#   bash experiments/cluster/one_node_slurm.sh stop     # stop slurmd, slurmctld, slurmdbd, MariaDB and munged
# Idempotent: start on a running cluster only waits for it. It writes /etc/slurm/slurm.conf and slurmdbd.conf
# (refusing to replace files it did not write) and runs munged, MariaDB, slurmdbd, slurmctld and slurmd as daemons.
# Accounting is on and enforced, as on a real cluster: sacct answers, and a job must name an account SLURM knows.
# The cluster has one: rl-harness (root's default), and one partition: main.
set -euo pipefail

action=${1:-}
conf=/etc/slurm/slurm.conf
dbd_conf=/etc/slurm/slurmdbd.conf
account=rl-harness
mariadb_pid=/run/mysqld/rl-harness-slurm.pid
marker="# written by experiments/cluster/one_node_slurm.sh"
state=/var/lib/rl-harness-slurm
fail() { echo "error: $*" >&2; exit 2; }

[ "$action" = start ] || [ "$action" = stop ] || [ "$action" = status ] || fail "usage: $0 start|stop|status"
[ "$(id -u)" = 0 ] || fail "a one-node SLURM needs root (its daemons run as root and write /etc/slurm); run it as root"

running() { sinfo -h -o %t >/dev/null 2>&1; }

if [ "$action" = status ]; then
  running || fail "no SLURM controller answers here"
  sinfo -h -o "%n %t %c CPUs %m MB" ; exit 0
fi

if [ "$action" = stop ]; then
  for daemon in slurmd slurmctld slurmdbd; do pkill -x "$daemon" 2>/dev/null || true; done
  if [ -f "$mariadb_pid" ]; then kill "$(cat "$mariadb_pid")" 2>/dev/null || true; rm -f "$mariadb_pid"; fi
  pkill -x munged 2>/dev/null || true
  for _ in $(seq 100); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || pgrep -x slurmdbd >/dev/null \
      || pgrep -x munged >/dev/null || exit 0
    sleep 0.2
  done
  fail "the SLURM daemons did not stop"
fi

packages=()
for pair in slurmctld:slurm-wlm slurmd:slurm-wlm munged:slurm-wlm slurmdbd:slurmdbd mariadbd:mariadb-server; do
  command -v "${pair%%:*}" >/dev/null || packages+=("${pair#*:}")
done
if [ ${#packages[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || fail "${packages[*]} not installed and there is no apt-get to install them"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${packages[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq "${packages[@]}" >/dev/null; } \
    || fail "could not install Debian's ${packages[*]}"
fi

for file in "$conf" "$dbd_conf"; do
  if [ -e "$file" ] && ! grep -qx "$marker" "$file"; then
    fail "$file exists and was not written by this script; not replacing it"
  fi
done
host=$(hostname -s)
cpus=$(nproc)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p "$state/ctld" "$state/d" /var/log/slurm /run/munge
# MessageTimeout: one machine answers in milliseconds, and while the cluster is stopped a SLURM command retries the
# controller once a second for MessageTimeout - 1 s; Snakemake's SLURM plugin runs one (scontrol show config) each
# time Snakemake starts, whatever the executor: 10 s, SLURM's default, would add 9 s to every start.
cat > "$conf.new" <<CONF
$marker
ClusterName=rl-harness
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=3600
MessageTimeout=5
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$host
AccountingStorageEnforce=associations
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
mv "$conf.new" "$conf"
(umask 077 && cat > "$dbd_conf.new" <<CONF
$marker
AuthType=auth/munge
DbdHost=$host
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=/run/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
CONF
)
mv "$dbd_conf.new" "$dbd_conf"

if ! running; then
  chown munge:munge /run/munge
  pgrep -x munged >/dev/null || runuser -u munge -- munged
  # The accounting database: MariaDB on its own socket, reached by root through socket authentication.
  if ! mariadb-admin ping -s >/dev/null 2>&1; then
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null
    mariadbd --user=mysql --skip-networking --pid-file="$mariadb_pid" >/var/log/slurm/mariadb.log 2>&1 &
    for _ in $(seq 150); do mariadb-admin ping -s >/dev/null 2>&1 && break; sleep 0.2; done
    mariadb-admin ping -s >/dev/null 2>&1 || fail "MariaDB did not start (log: /var/log/slurm/mariadb.log)"
  fi
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db"
  pgrep -x slurmdbd >/dev/null || slurmdbd
  for _ in $(seq 150); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
  sacctmgr -n list cluster >/dev/null 2>&1 || fail "slurmdbd did not answer (log: /var/log/slurm/slurmdbd.log)"
  sacctmgr -n list cluster format=cluster | grep -qw rl-harness || sacctmgr -i add cluster rl-harness >/dev/null
  sacctmgr -n list account format=account | grep -qw "$account" || sacctmgr -i add account "$account" >/dev/null
  sacctmgr -n list assoc user=root account="$account" format=user | grep -qw root \
    || sacctmgr -i add user root account="$account" >/dev/null
  sacctmgr -i modify user root set defaultaccount="$account" >/dev/null || true  # unchanged: exit status 1
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
fi
for _ in $(seq 150); do
  if [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || [ "$(sinfo -h -o %t 2>/dev/null)" = mix ]; then
    sinfo -h -o "%n %t %c CPUs %m MB"; exit 0
  fi
  sleep 0.2
done
fail "the node did not come up idle within 30 s (sinfo: $(sinfo -h -o %t 2>&1 | head -1); logs in /var/log/slurm/)"
