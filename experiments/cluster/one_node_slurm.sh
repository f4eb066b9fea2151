#!/usr/bin/env bash
# A one-node SLURM on this machine, for tests and trials of the SLURM profile (experiments/profiles/slurm):
#   bash experiments/cluster/one_node_slurm.sh start    # install Debian's slurm-wlm if missing, configure, start, wait
#   bash experiments/cluster/one_node_slurm.sh status   # the node's state, as sinfo reports it
#   bash experiments/cluster/one_node_slurm.sh stop     # stop slurmd, slurmctld and munged
# Idempotent: start on a running cluster only waits for it. It writes /etc/slurm/slurm.conf (refusing to replace
# one it did not write), runs munged, slurmctld and slurmd as daemons, and has no accounting database: job states
# come from squeue, which keeps a finished job for MinJobAge seconds (use --slurm-status-command squeue).
set -euo pipefail

action=${1:-}
conf=/etc/slurm/slurm.conf
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
  for daemon in slurmd slurmctld; do pkill -x "$daemon" 2>/dev/null || true; done
  pkill -x munged 2>/dev/null || true
  for _ in $(seq 50); do pgrep -x 'slurmd|slurmctld|munged' >/dev/null || exit 0; sleep 0.2; done
  fail "the SLURM daemons did not stop"
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || fail "slurm-wlm is not installed and there is no apt-get to install it"
  apt-get install -y -qq slurm-wlm >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq slurm-wlm >/dev/null; } \
    || fail "could not install Debian's slurm-wlm package"
fi

if [ -e "$conf" ] && ! grep -qx "$marker" "$conf"; then
  fail "$conf exists and was not written by this script; not replacing it"
fi
host=$(hostname -s)
cpus=$(nproc)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p "$state/ctld" "$state/d" /var/log/slurm /run/munge
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
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
mv "$conf.new" "$conf"

if ! running; then
  chown munge:munge /run/munge
  pgrep -x munged >/dev/null || runuser -u munge -- munged
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
