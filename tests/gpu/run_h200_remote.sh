#!/usr/bin/env bash
# GPU run for remote evaluation (issue 26, docs/remote.md): the GPU machine is its own ssh host.
# Debian's OpenSSH server (carried in .device/bin by scripts/bundle-device.sh, with its libraries)
# listens on a free loopback port with a throwaway key; the engine reaches it through
# OPENKERNEL_SSH, a wrapper running `ssh -F` with this run's own client configuration. Then:
#   1. the Triton ReLU of tests/gpu/candidates on KernelBench level1/19 (full size), evaluated
#      locally and over ssh, each twice (the first ssh run ships the worker package): verdicts,
#      runtimes with their spread, and wall seconds side by side (the transfer overhead);
#   2. `optimize --model builtin --iterations 2` of level1/19 over ssh (a session's worker on the
#      host: verdicts and the best speedup);
#   3. an evaluation whose remote worker is killed mid-evaluation (kill -9 of the host's worker
#      once it runs a candidate process): the engine starts another and the evaluation still ends
#      correct.
# From the repo root on the GPU machine after scripts/bundle-device.sh, as root (sshd needs its
# privilege-separation user, added to /etc/passwd when missing):
#   OUT=/tmp/okgpu-remote tests/gpu/run_h200_remote.sh
# Results in $OUT: remote.tsv (run, where, verdict, runtime_us, runtime_stderr_us, speedup,
# wall_s), log.txt, and the JSON and stderr of every run in remote.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
D=$PWD/.device
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD OPENKERNEL_BWRAP=$D/bin/bwrap XDG_CACHE_HOME=/tmp/okremote/local-cache
BIN=${BIN:-$D/bin/openkernel}
KB=${KB:-$D/kernelbench}
# A CPU rehearsal: BACKEND=cpu CANDIDATE=... SETS="--set batch_size=16 --set dim=4096" PY=...
BACKEND=${BACKEND:-triton}
CANDIDATE=${CANDIDATE:-tests/gpu/candidates/relu_triton.py}
W=$(mktemp -d /tmp/okremote.XXXXXX)
exec > >(tee "$OUT/log.txt") 2>&1

[ -x "$D/bin/sshd" ] && [ -x "$D/bin/ssh" ] && [ -x "$D/bin/ssh-keygen" ] ||
  { echo "no sshd/ssh/ssh-keygen in $D/bin: run scripts/bundle-device.sh where openssh is"; exit 2; }
getent passwd sshd >/dev/null || echo 'sshd:x:74:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
mkdir -p -m 0755 /run/sshd
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$D/bin/ssh-keygen" -q -t ed25519 -N "" -f "$W/host_key"
"$D/bin/ssh-keygen" -q -t ed25519 -N "" -f "$W/user_key"
cp "$W/user_key.pub" "$W/authorized_keys"
# The host side's environment: its own cache, the bundled sandbox and libraries, this PATH (the
# device's python3 with torch).
cat > "$W/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $W/host_key
AuthorizedKeysFile $W/authorized_keys
PidFile $W/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding no
X11Forwarding no
SetEnv XDG_CACHE_HOME=$W/remote-cache OPENKERNEL_BWRAP=$D/bin/bwrap LD_LIBRARY_PATH=$LD_LIBRARY_PATH PATH=$PATH
EOF
cat > "$W/ssh_config" <<EOF
Host *
  User $(id -un)
  IdentityFile $W/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $W/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
EOF
printf '#!/bin/sh\nexec %s -F %s "$@"\n' "$D/bin/ssh" "$W/ssh_config" > "$W/ssh"
chmod 755 "$W/ssh"
export OPENKERNEL_SSH=$W/ssh
"$D/bin/sshd" -D -e -f "$W/sshd_config" > "$W/sshd.log" 2>&1 &
sshd_pid=$!
trap 'kill $sshd_pid 2>/dev/null' EXIT
for _ in $(seq 50); do
  "$W/ssh" -p "$port" 127.0.0.1 true 2>/dev/null && break
  sleep 0.2
done
"$W/ssh" -p "$port" 127.0.0.1 'echo host side: $(id -un) on $(hostname), python3 $(command -v python3)' ||
  { echo "sshd did not answer:"; tail -20 "$W/sshd.log"; exit 1; }
HOST=ssh://127.0.0.1:$port
PY=${PY:-$(command -v python3)}

TSV=$OUT/remote.tsv
printf 'run\twhere\tverdict\truntime_us\truntime_stderr_us\tspeedup\twall_s\n' > "$TSV"
row() {  # run where json wall
  python3 - "$@" >> "$TSV" <<'PY'
import json, sys
run, where, path, wall = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:  # noqa: BLE001
    print(f"{run}\t{where}\tno result ({e})\t\t\t\t{wall}"); sys.exit(0)
t = r.get("runtime_us") or {}
print("\t".join(str(x) for x in (run, where, r.get("verdict"), t.get("median"), t.get("stderr"),
                                  r.get("speedup"), wall)))
PY
}
evaluate() {  # tag, extra args...
  local tag=$1; shift
  local t0; t0=$(date +%s.%N)
  timeout -k 10 240 "$BIN" evaluate --level 1 --problem 19 --kernelbench-dir "$KB" \
    --backend "$BACKEND" --candidate "$CANDIDATE" ${SETS:-} --seed 7 --json --db "$W/db" "$@" \
    > "$W/$tag.json" 2> "$W/$tag.err"
  echo "== $tag: rc $?"
  row "$tag" "${tag%%-*}" "$W/$tag.json" "$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")"
}
evaluate local-1
evaluate local-2
evaluate ssh-1 --eval-host "$HOST" --python "$PY"
evaluate ssh-2 --eval-host "$HOST" --python "$PY"
echo "== shipped on the host: $(ls "$W/remote-cache/openkernel" 2>/dev/null | tr '\n' ' ')"

t0=$(date +%s)
timeout -k 10 300 "$BIN" optimize --level 1 --problem 19 --kernelbench-dir "$KB" \
  --backend "$BACKEND" ${SETS:-} --model builtin --iterations 2 --seed 1 --json --out "$W/opt" --db "$W/db" \
  --eval-host "$HOST" --python "$PY" > "$W/optimize.json" 2> "$W/optimize.err"
echo "== optimize over ssh: rc $?, $(( $(date +%s) - t0 )) s"
python3 - "$W/optimize.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:  # noqa: BLE001
    print(f"   no result ({e})"); sys.exit(0)
print("   " + json.dumps({k: r.get(k) for k in ("status", "stop_reason", "verdict", "speedup",
                                                 "runtime_us", "best_attempt", "device")})[:600])
PY

# A remote worker killed mid-evaluation: the engine's next worker finishes it.
( pids=$(python3 - "$W/remote-cache/openkernel" <<'PY'
import sys, time
from pathlib import Path
mark = f"OPENKERNEL_REMOTE_CACHE={sys.argv[1]}".encode()  # the host worker's environment
deadline = time.monotonic() + 120
while time.monotonic() < deadline:  # a worker busy with a candidate process: mid-evaluation
    for e in Path("/proc").iterdir():
        try:
            if (e.name.isdigit() and b"openkernel_worker" in (e / "cmdline").read_bytes()
                    and mark in (e / "environ").read_bytes().split(b"\0")
                    and (e / "task" / e.name / "children").read_text().split()):
                print(e.name); sys.exit(0)
        except OSError:
            pass
    time.sleep(0.1)
PY
)
  echo "== killing the host's busy worker: ${pids:-none found}"
  [ -n "$pids" ] && kill -9 $pids ) &
killer=$!
evaluate ssh-killed --eval-host "$HOST" --python "$PY"
wait "$killer"
grep -h -i -E 'lost|retry|again' "$W/ssh-killed.err" | head -5

cat "$TSV"
tar -czf "$OUT/remote.tgz" --exclude='*.db*' --exclude='remote-cache' --exclude='*_key*' -C "$W" .
echo "remote rc 0"
