#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for tests/workflow/test_slurm.py (and for trying
# `snakemake --profile workflow/profiles/slurm` without a cluster).
#
#   sudo scripts/slurm/setup_local_slurm.sh        # Debian/Ubuntu, as root, no systemd needed
#
# Installs Debian's SLURM daemons, munge and MariaDB (for slurmdbd, so that `sacct` works, as the
# SLURM executor plugin and the test need), writes slurm.conf with this machine's CPUs and
# memory (`slurmd -C`), and starts munged, mariadbd, slurmdbd, slurmctld and slurmd directly.
# Idempotent: what is installed is not installed again, what runs is left running (a daemon
# whose configuration changed is restarted). Where the packages cannot be installed (no apt,
# no network, not root) it says so and exits 0 without a cluster: the test then skips.
# Logs: /var/log/slurm/. Stop: kill the pids in /run/slurm*.pid, /run/munge/munged.pid and
# /run/mysqld/mysqld.pid.
set -euo pipefail

CLUSTER=dpminimax
PARTITION=local
DB_PASS=dpminimax-local-slurm  # a local test database reachable only through its socket
LOG=/var/log/slurm
PACKAGES=(slurmctld slurmd slurmdbd slurm-client munge mariadb-server)

note() { echo "setup_local_slurm: $*" >&2; }
skip() { note "$* -- no local SLURM cluster (tests/workflow/test_slurm.py skips)"; exit 0; }

[ "$(id -u)" = 0 ] || skip "not root"
command -v apt-get >/dev/null || skip "no apt-get"

# 1. Packages (apt-get only when one is missing; an unreachable mirror is not an error).
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  note "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 120 apt-get update -qq >/dev/null 2>&1 || note "apt-get update failed"
  timeout 300 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || skip "apt-get install ${missing[*]} failed (no network?)"
fi

mkdir -p "$LOG" /var/spool/slurmctld /var/spool/slurmd /run/munge /run/mysqld
chown munge:munge /run/munge
chown mysql:mysql /run/mysqld

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local tries=$(( $1 * 2 )) what=$2; shift 2
  for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  note "$what did not come up; see $LOG"; return 1
}
# install_conf FILE MODE: write stdin to FILE; prints "changed" when the content changed.
install_conf() {
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 0; fi
  install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo changed
}
stop() {  # stop PIDFILE: end the daemon this script started, by its pid
  if alive "$1"; then
    local pid; pid=$(cat "$1"); kill "$pid"
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$1"
}

# 2. munge (authentication between the daemons and the clients).
[ -s /etc/munge/munge.key ] || { mungekey --create --force 2>/dev/null \
  || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
if ! alive /run/munge/munged.pid; then
  runuser -u munge -- /usr/sbin/munged --force
  wait_for 20 munged sh -c 'munge -n | unmunge'
fi

# 3. MariaDB and the accounting database for slurmdbd.
if ! mysqladmin ping >/dev/null 2>&1; then
  setsid /usr/sbin/mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid \
    >>"$LOG/mariadb.log" 2>&1 < /dev/null &
  wait_for 60 mariadbd mysqladmin ping
fi
mysql -u root <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL

# 4. slurm.conf: this machine as the only node, with its real CPUs and memory.
node=$(slurmd -C | head -1)  # NodeName=<host> CPUs=... RealMemory=...
host=${node#NodeName=}; host=${host%% *}
conf_changed=$(install_conf /etc/slurm/slurm.conf 644 <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=2
JobCompType=jobcomp/none
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
# 5. slurmdbd (sacctmgr finds it through slurm.conf), and the cluster in its database.
dbd_changed=$(install_conf /etc/slurm/slurmdbd.conf 600 <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$LOG/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
)
if [ -n "$dbd_changed" ]; then stop /run/slurmdbd.pid; fi
if ! alive /run/slurmdbd.pid; then
  slurmdbd
  wait_for 60 slurmdbd sacctmgr -n list cluster
fi
sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" \
  || sacctmgr -i add cluster "$CLUSTER" >/dev/null

# 6. slurmctld and slurmd (restarted when slurm.conf changed).
if [ -n "$conf_changed" ]; then stop /run/slurmd.pid; stop /run/slurmctld.pid; fi
if ! alive /run/slurmctld.pid; then
  slurmctld
  wait_for 60 slurmctld scontrol ping
fi
if ! alive /run/slurmd.pid; then
  slurmd
fi
ready() { sinfo -h -n "$host" -o %t | grep -Eq '^(idle|mix|alloc)'; }
if ! wait_for 60 "node $host" ready; then
  scontrol update nodename="$host" state=resume 2>/dev/null || true
  wait_for 30 "node $host" ready
fi
note "cluster $CLUSTER up: $(sinfo -h -o '%P %D %c CPUs %m MB %t')"
