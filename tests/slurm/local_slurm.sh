#!/usr/bin/env bash
# local_slurm.sh - bring up / tear down a throw-away single-node SLURM cluster
# on loopback, for CI tests of the SLURM executor.
#
#   tests/slurm/local_slurm.sh up     STATE_DIR   # install (if needed) + start
#   tests/slurm/local_slurm.sh down   STATE_DIR   # stop everything we started
#   tests/slurm/local_slurm.sh status STATE_DIR   # exit 0 iff the node is usable
#
# `up` prints exactly one line on stdout,
#     export SLURM_CONF=STATE_DIR/slurm.conf
# so a caller can `eval "$(tests/slurm/local_slurm.sh up "$dir")"`.
# Everything else (progress, diagnostics) goes to stderr.
#
# Exit codes:
#   0  success (cluster ready / stopped)
#   1  SLURM is installed but the cluster failed to come up (a real failure;
#      the tails of the daemon logs are printed to stderr)
#   2  usage error
#   3  "cannot provide SLURM here": not root and no password-less sudo, no
#      apt-get, or the packages cannot be installed.  Tests should SKIP.
#
# Target: Debian 12 (bookworm, slurm-wlm 22.05) with or without systemd
# (containers / microVMs).  Nothing is started through systemctl: every daemon
# is started directly, with all of its state, sockets, pid files and logs
# under STATE_DIR, and its own private munged + key, so the script does not
# touch /etc/slurm, /etc/munge or a system munged that may already be running.
#
# Tunables (environment):
#   LOCAL_SLURM_CTLD_PORT    slurmctld port          (default 6817)
#   LOCAL_SLURM_SLURMD_PORT  slurmd port             (default 6818)
#   LOCAL_SLURM_TIMEOUT      seconds to wait for the node to become idle (60)
#   LOCAL_SLURM_DEBUG        SlurmctldDebug/SlurmdDebug level (default info)
#   LOCAL_SLURM_KEEP_ON_FAILURE=1  leave daemons running when `up` fails

set -euo pipefail

readonly EXIT_FAIL=1
readonly EXIT_USAGE=2
readonly EXIT_CANNOT=3

# Debian 12 package names (source package slurm-wlm 22.05).  slurm-client
# provides sbatch/srun/squeue/scancel/scontrol/sinfo; munge provides
# munged/munge/mungekey.  slurm-wlm-basic-plugins is pulled in as a dependency.
readonly PACKAGES=(slurmctld slurmd slurm-client munge)
readonly REQUIRED_BINARIES=(slurmctld slurmd slurmstepd sbatch srun squeue scancel scontrol sinfo munged munge)

CTLD_PORT=${LOCAL_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${LOCAL_SLURM_SLURMD_PORT:-6818}
READY_TIMEOUT=${LOCAL_SLURM_TIMEOUT:-60}
DEBUG_LEVEL=${LOCAL_SLURM_DEBUG:-info}

log() { printf 'local_slurm: %s\n' "$*" >&2; }
die() {
    local code=$1
    shift
    log "ERROR: $*"
    exit "$code"
}

usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit "$EXIT_USAGE"
}

# ---------------------------------------------------------------------------
# Argument parsing and privilege handling
# ---------------------------------------------------------------------------

[[ $# -eq 2 ]] || usage
CMD=$1
case "$CMD" in
up | down | status) ;;
-h | --help | help) usage ;;
*) usage ;;
esac
[[ -n $2 ]] || usage

# Absolute path: the path ends up in slurm.conf and in the exported SLURM_CONF,
# and the daemons chdir away from the caller's working directory.  Only `up`
# creates the directory (after the privilege check).
STATE_DIR=$(realpath -m -- "$2")

# slurmd must run as root (it setuid()s to the job owner), and so does our
# munged (it has to read its key).  When not root, re-exec through
# password-less sudo; otherwise we cannot provide SLURM here -> exit 3.
# (`status` only queries the cluster and needs no privileges.)
if [[ $EUID -ne 0 && $CMD != status ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        log "not root; re-executing through sudo"
        # Pass our tunables explicitly: sudo's env_reset would drop them.
        exec sudo -n -- env \
            LOCAL_SLURM_CTLD_PORT="$CTLD_PORT" \
            LOCAL_SLURM_SLURMD_PORT="$SLURMD_PORT" \
            LOCAL_SLURM_TIMEOUT="$READY_TIMEOUT" \
            LOCAL_SLURM_DEBUG="$DEBUG_LEVEL" \
            LOCAL_SLURM_KEEP_ON_FAILURE="${LOCAL_SLURM_KEEP_ON_FAILURE:-0}" \
            LOCAL_SLURM_CALLER="$(id -u):$(id -g)" \
            bash "$(realpath -- "${BASH_SOURCE[0]}")" "$CMD" "$STATE_DIR"
    fi
    die "$EXIT_CANNOT" "cannot provide SLURM here: running as uid $EUID and" \
        "password-less sudo is not available (slurmd and munged must run as root)"
fi

# A caller running inside a real SLURM allocation (or with its own SLURM_CONF)
# must not leak that configuration into our clients.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_|SQUEUE_|SINFO_)' || true)

# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------

CONF=$STATE_DIR/slurm.conf
LOG_DIR=$STATE_DIR/log
RUN_DIR=$STATE_DIR/run          # pid files
CTLD_STATE=$STATE_DIR/ctld-state # StateSaveLocation (job/node state, job scripts)
MUNGE_DIR=$STATE_DIR/munge      # key, seed, log; mode 0700

# Unix sockets are limited to 108 bytes (sun_path).  Both the munge socket and
# the slurmd spool dir (slurmstepd creates <spool>/<node>_<jobid>.<stepid>
# sockets there, e.g. "vm_17.4294967291" for a batch step) must therefore live
# under a short path.  For a long STATE_DIR use a directory in /tmp derived
# deterministically from STATE_DIR, so `down` finds the same one.
if [[ ${#STATE_DIR} -le 48 ]]; then
    SOCK_BASE=$STATE_DIR
else
    SOCK_BASE=/tmp/local_slurm.$(printf '%s' "$STATE_DIR" | cksum | cut -d' ' -f1)
fi
MUNGE_SOCK_DIR=$SOCK_BASE/munge-sock # must be 0755 (munged checks "execute for all")
MUNGE_SOCKET=$MUNGE_SOCK_DIR/munge.socket
SPOOL_DIR=$SOCK_BASE/slurmd-spool

CTLD_PID=$RUN_DIR/slurmctld.pid
SLURMD_PID=$RUN_DIR/slurmd.pid
MUNGED_PID=$RUN_DIR/munged.pid

# ---------------------------------------------------------------------------
# Process helpers
# ---------------------------------------------------------------------------

# pid_alive PID COMM: true if PID exists, is not a zombie (PID 1 in a
# container may never reap the daemons' exited children) and its comm is COMM
# (guards against pid reuse after a reboot / container restart).
pid_alive() {
    local pid=$1 comm=$2 stat
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/stat ]] || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    # Field 3 (after the ")" that closes comm) is the state.
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]] || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]]
}

read_pid() {
    if [[ -r $1 ]]; then tr -dc '0-9' <"$1" || true; fi
}

# stop_pidfile PIDFILE COMM: SIGTERM, wait up to 15 s, then SIGKILL.
stop_pidfile() {
    local pidfile=$1 comm=$2 pid i
    pid=$(read_pid "$pidfile")
    if [[ -n $pid ]] && pid_alive "$pid" "$comm"; then
        log "stopping $comm (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 150; i++)); do
            pid_alive "$pid" "$comm" || break
            sleep 0.1
        done
        if pid_alive "$pid" "$comm"; then
            log "$comm (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
        fi
    fi
    rm -f -- "$pidfile"
}

# port_in_use PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

conf_node_name() { sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$CONF" | head -n 1; }

show_logs() {
    local f
    for f in "$LOG_DIR/slurmctld.stderr" "$LOG_DIR/slurmctld.log" \
        "$LOG_DIR/slurmd.stderr" "$LOG_DIR/slurmd.log" "$MUNGE_DIR/munged.log"; do
        [[ -s $f ]] || continue
        printf '\n----- tail -n 40 %s -----\n' "$f" >&2
        tail -n 40 -- "$f" >&2 || true
    done
    printf '\n' >&2
}

# ---------------------------------------------------------------------------
# down
# ---------------------------------------------------------------------------

do_down() {
    if [[ ! -d $STATE_DIR ]]; then
        return 0
    fi
    local ctld node=""
    ctld=$(read_pid "$CTLD_PID")
    if [[ -f $CONF ]]; then node=$(conf_node_name); fi
    # Cancel leftover jobs first: slurmstepd processes are detached from
    # slurmd and would otherwise keep running (and writing into STATE_DIR)
    # after the daemons are gone.
    if [[ -f $CONF && -n $ctld ]] && pid_alive "$ctld" slurmctld; then
        local jobs i
        jobs=$(SLURM_CONF=$CONF timeout 15 squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
        if [[ -n ${jobs// /} ]]; then
            log "cancelling leftover jobs: $jobs"
            # shellcheck disable=SC2086  # word splitting of the id list is intended
            SLURM_CONF=$CONF timeout 15 scancel $jobs >/dev/null 2>&1 || true
            # Wait (KillWait=5 s + slack) for the step daemons to finish; their
            # sockets in the spool dir disappear when they exit.
            for ((i = 0; i < 150; i++)); do
                compgen -G "$SPOOL_DIR/${node}_*" >/dev/null || break
                sleep 0.1
            done
        fi
    fi
    # slurmd before slurmctld so the controller does not see a dead node
    # (and does not mark it DOWN in the state it saves).
    stop_pidfile "$SLURMD_PID" slurmd
    stop_pidfile "$CTLD_PID" slurmctld
    # munged: only ever the private one this script started (its pid file is
    # under STATE_DIR); a system munged on /run/munge is never touched.
    stop_pidfile "$MUNGED_PID" munged
    rm -f -- "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
}

# ---------------------------------------------------------------------------
# up
# ---------------------------------------------------------------------------

ensure_packages() {
    local missing=() b
    for b in "${REQUIRED_BINARIES[@]}"; do
        command -v "$b" >/dev/null 2>&1 || missing+=("$b")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0

    command -v apt-get >/dev/null 2>&1 ||
        die "$EXIT_CANNOT" "cannot provide SLURM here: missing ${missing[*]} and no apt-get"
    log "installing ${PACKAGES[*]} (missing: ${missing[*]}); log: $LOG_DIR/apt.log"
    # - noninteractive: no debconf prompts in CI.
    # - --no-install-recommends: smaller/faster; nothing recommended is needed.
    # - DPkg::Lock::Timeout: a fresh VM may still be running unattended-upgrades.
    # On a host with systemd the packages' postinst starts munge.service (on
    # /run/munge, which we do not use); slurmctld/slurmd units do not start
    # without /etc/slurm/slurm.conf.
    local apt=(apt-get -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
    if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install --no-install-recommends \
        "${PACKAGES[@]}" >>"$LOG_DIR/apt.log" 2>&1; then
        # A fresh box may have empty package lists.
        log "install failed; running apt-get update and retrying"
        if ! { DEBIAN_FRONTEND=noninteractive "${apt[@]}" update &&
            DEBIAN_FRONTEND=noninteractive "${apt[@]}" install --no-install-recommends \
                "${PACKAGES[@]}"; } >>"$LOG_DIR/apt.log" 2>&1; then
            tail -n 20 -- "$LOG_DIR/apt.log" >&2 || true
            die "$EXIT_CANNOT" "cannot provide SLURM here: apt-get install ${PACKAGES[*]} failed"
        fi
    fi
    for b in "${REQUIRED_BINARIES[@]}"; do
        command -v "$b" >/dev/null 2>&1 ||
            die "$EXIT_CANNOT" "cannot provide SLURM here: $b still missing after install"
    done
}

start_munged() {
    mkdir -p -- "$MUNGE_DIR" "$MUNGE_SOCK_DIR"
    chmod 0700 "$MUNGE_DIR"
    # munged refuses a socket directory that is not traversable by everyone
    # (clients run as the job owner, who may not be root).
    chmod 0755 "$MUNGE_SOCK_DIR"
    if [[ ! -s $MUNGE_DIR/munge.key ]]; then
        log "creating munge key"
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile="$MUNGE_DIR/munge.key"
        else
            (umask 077 && dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none)
        fi
    fi
    chmod 0600 "$MUNGE_DIR/munge.key"
    rm -f -- "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    # --force: munged insists that every directory above its key, log and
    # pid file is root-owned and not world-writable.  A STATE_DIR made by
    # mktemp or owned by a CI user fails those checks; --force turns them into
    # warnings.  (It would also let a second munged grab the same socket,
    # which is why do_down has already stopped any previous instance.)
    if ! munged --force \
        --socket="$MUNGE_SOCKET" \
        --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$MUNGED_PID" \
        --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed" 2>>"$MUNGE_DIR/munged.log"; then
        show_logs
        die "$EXIT_FAIL" "munged failed to start"
    fi
    local i
    for ((i = 0; i < 50; i++)); do
        munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    show_logs
    die "$EXIT_FAIL" "munged does not answer on $MUNGE_SOCKET"
}

write_config() {
    local node cpus mem_mib
    # The node is named after the short hostname, which is also what sbatch
    # reports as SLURM_SUBMIT_HOST and what `srun hostname` prints.  slurmd is
    # started with -N so it never has to guess its node name, and all
    # addresses are given explicitly (127.0.0.1), so no DNS / /etc/hosts entry
    # for the hostname is needed.
    node=$(hostname -s 2>/dev/null || true)
    [[ -n $node ]] || node=$(uname -n)
    node=${node%%.*}
    NODE_NAME=$node
    cpus=$(nproc)
    # RealMemory a bit (~5%, >= 256 MiB) under MemTotal.  With
    # SlurmdParameters=config_overrides a mismatch would not drain the node
    # anyway, but a RealMemory above the real value would let jobs ask for
    # memory that is not there.
    mem_mib=$(awk '/^MemTotal:/ { m = int($2 / 1024); r = int(m * 0.05); if (r < 256) r = 256; m -= r; if (m < 256) m = 256; print m }' /proc/meminfo)

    cat >"$CONF.tmp" <<EOF
# Generated by tests/slurm/local_slurm.sh - single-node loopback test cluster.
ClusterName=localci
# Controller on this host, reached over loopback.  The name must equal the
# short hostname for slurmctld to accept that it is the primary controller;
# the "(addr)" part avoids any name resolution.
# (slurmctld still binds 0.0.0.0; only holders of the private munge key can
# talk to it.)
SlurmctldHost=${node}(127.0.0.1)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}

# Private munged (see AuthInfo) instead of the system one on /run/munge.
# AuthInfo is read by the daemons and by every client (sbatch, srun, ...) via
# SLURM_CONF, and is also used by cred/munge in 22.05.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCKET}

# Everything runs as root: no 'slurm' user/file ownership to manage.  Jobs
# still run as the submitting user.
SlurmUser=root
SlurmdUser=root

# All state under STATE_DIR so concurrent/previous runs never collide.
StateSaveLocation=${CTLD_STATE}
SlurmdSpoolDir=${SPOOL_DIR}
SlurmctldPidFile=${CTLD_PID}
SlurmdPidFile=${SLURMD_PID}
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
SlurmctldDebug=${DEBUG_LEVEL}
SlurmdDebug=${DEBUG_LEVEL}

# No cgroups anywhere: CI containers may have no (delegated) cgroup v2.
# linuxproc tracks a job's processes through /proc parent links, which is
# enough for scancel / time limits to kill the whole job; task/none does no
# binding; no cgroup.conf is needed with these.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none

# No slurmdbd: no accounting, so sacct does not work (use squeue/scontrol).
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none

# cons_tres with CR_Core: each job gets >= 1 core, so up to nproc jobs run at
# once; memory is not a consumable resource (jobs without --mem would
# otherwise reserve the whole node and run one at a time).
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core

# A node that was DOWN (e.g. slurmd restarted) returns to service as soon as
# it registers with a valid configuration.
ReturnToService=2
# Trust slurm.conf over detected hardware (CPUs=nproc may differ from the
# socket/core layout slurmd detects), so the node is never drained for it.
SlurmdParameters=config_overrides
# Short grace between SIGTERM and SIGKILL on scancel/timeout (default 30 s).
KillWait=5
# Keep finished jobs visible to squeue/scontrol for 10 min (default 5 min):
# without accounting this is the only place a job's final state can be read.
MinJobAge=600
# No mail program installed; silences an error in slurmctld.log.
MailProg=/bin/true

NodeName=${node} NodeHostname=${node} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem_mib} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f -- "$CONF.tmp" "$CONF"
    # Readable by job owners / a non-root caller.
    chmod 0644 "$CONF"
}

node_state() {
    SLURM_CONF=$CONF timeout 10 sinfo -h -N -n "$NODE_NAME" -o %T 2>/dev/null | head -n 1 || true
}

fail_up() {
    log "ERROR: $*"
    show_logs
    if [[ ${LOCAL_SLURM_KEEP_ON_FAILURE:-0} != 1 ]]; then
        log "tearing down (set LOCAL_SLURM_KEEP_ON_FAILURE=1 to keep the daemons)"
        do_down || true
    fi
    exit "$EXIT_FAIL"
}

do_up() {
    local t0=$SECONDS
    mkdir -p -- "$STATE_DIR" "$LOG_DIR"
    ensure_packages

    # Safe re-run: stop whatever a previous `up` on this STATE_DIR left.
    do_down

    local p
    for p in "$CTLD_PORT" "$SLURMD_PORT"; do
        if port_in_use "$p"; then
            log "ERROR: TCP port $p on 127.0.0.1 is already in use (a slurmctld/slurmd" \
                "from another STATE_DIR or a system SLURM?). Set LOCAL_SLURM_CTLD_PORT /" \
                "LOCAL_SLURM_SLURMD_PORT to other ports or stop it."
            if command -v ss >/dev/null 2>&1; then ss -ltnp "( sport = :$p )" >&2 || true; fi
            exit "$EXIT_FAIL"
        fi
    done

    mkdir -p -- "$RUN_DIR" "$CTLD_STATE" "$SPOOL_DIR"
    chmod 0755 "$STATE_DIR" "$RUN_DIR" "$LOG_DIR" "$SPOOL_DIR" 2>/dev/null || true
    chmod 0700 "$CTLD_STATE"
    if [[ -n ${LOCAL_SLURM_CALLER:-} ]]; then
        # Re-executed via sudo: give the top-level dir back to the caller so
        # its jobs can write output files there.  munged --force copes.
        chown -- "$LOCAL_SLURM_CALLER" "$STATE_DIR" 2>/dev/null || true
    fi

    start_munged
    write_config
    export SLURM_CONF=$CONF

    # Both daemons fork into the background and write their pid files.  The
    # controller keeps its saved state across `down`/`up` (jobs, job ids).
    slurmctld -f "$CONF" >>"$LOG_DIR/slurmctld.stderr" 2>&1 ||
        fail_up "slurmctld failed to start (see $LOG_DIR/slurmctld.stderr)"
    slurmd -f "$CONF" -N "$NODE_NAME" >>"$LOG_DIR/slurmd.stderr" 2>&1 ||
        fail_up "slurmd failed to start (see $LOG_DIR/slurmd.stderr)"

    local started=$SECONDS deadline=$((SECONDS + READY_TIMEOUT)) state="" resumed=0 pid
    while :; do
        state=$(node_state)
        case "$state" in
        idle | mixed | allocated | completing) break ;;
        esac
        # A recovered state file can hold the node as DOWN/DRAINED with an
        # old reason; ReturnToService=2 covers DOWN, resume covers DRAIN.
        if [[ $resumed -eq 0 && $state =~ ^(down|drain|drained|draining)$ ]]; then
            log "node $NODE_NAME is '$state'; resuming it"
            SLURM_CONF=$CONF timeout 10 scontrol update NodeName="$NODE_NAME" State=RESUME >&2 || true
            resumed=1
        fi
        for p in "$CTLD_PID:slurmctld" "$SLURMD_PID:slurmd"; do
            pid=$(read_pid "${p%%:*}")
            # Give a daemon 3 s to write its pid file before calling it dead.
            if [[ -z $pid && $((SECONDS - started)) -lt 3 ]]; then continue; fi
            pid_alive "$pid" "${p##*:}" || fail_up "${p##*:} is not running"
        done
        ((SECONDS < deadline)) ||
            fail_up "node $NODE_NAME not idle after ${READY_TIMEOUT}s (state: '${state:-no answer}')"
        sleep 0.5
    done

    log "cluster ready in $((SECONDS - t0))s: node $NODE_NAME ($(nproc) CPUs), partition debug," \
        "slurmctld 127.0.0.1:$CTLD_PORT, slurmd 127.0.0.1:$SLURMD_PORT, logs in $LOG_DIR"
    printf 'export SLURM_CONF=%q\n' "$CONF"
}

do_status() {
    [[ -f $CONF ]] || die "$EXIT_FAIL" "no $CONF"
    NODE_NAME=$(conf_node_name)
    local state
    state=$(node_state)
    log "node ${NODE_NAME}: ${state:-no answer}"
    case "$state" in
    idle | mixed | allocated | completing) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
    *) exit "$EXIT_FAIL" ;;
    esac
}

case "$CMD" in
up) do_up ;;
down)
    if [[ -d $STATE_DIR ]]; then
        do_down
        log "stopped (state kept in $STATE_DIR)"
    else
        log "$STATE_DIR does not exist; nothing to stop"
    fi
    ;;
status) do_status ;;
esac
