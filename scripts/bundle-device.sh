#!/usr/bin/env bash
# Copies the built engine and the shared libraries it needs (all but glibc's own) into .device/,
# with the KernelBench problems a GPU run needs, so the `device` tool can carry them to a machine
# that has none of our Debian packages. Usage: scripts/bundle-device.sh [kernelbench-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
kb=${1:-../shared/kernelbench}
# KernelBench's harness source for bench/kernelbench_side_by_side.sh (never committed): kept from an
# earlier bundle, or exported from a git mirror (the `fetch` tool's github:ScalingIntelligence/
# KernelBench lands in /work/.mirror/ScalingIntelligence+KernelBench/repo). Only its package and
# run_and_check.py (about 0.4 MB).
kbgit=${KERNELBENCH_GIT:-/work/.mirror/ScalingIntelligence+KernelBench/repo}
keep=""
if [ -d .device/kernelbench-src/src/kernelbench ]; then
  keep=$(mktemp -d) && mv .device/kernelbench-src "$keep/"
fi
rm -rf .device && mkdir -p .device/bin .device/lib .device/kernelbench
if [ -n "$keep" ]; then
  mv "$keep/kernelbench-src" .device/ && rmdir "$keep"
elif git --git-dir="$kbgit" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  mkdir -p .device/kernelbench-src
  git --git-dir="$kbgit" archive HEAD src/kernelbench scripts/run_and_check.py LICENSE |
    tar -x -C .device/kernelbench-src
  rm -rf .device/kernelbench-src/src/kernelbench/unit_tests
  git --git-dir="$kbgit" rev-parse HEAD > .device/kernelbench-src/COMMIT
fi
cp build/release/bin/openkernel .device/bin/ && strip .device/bin/openkernel
# The search bench's replay (bench/search_replay.cpp), when built.
if [ -x build/release/bin/search_replay ]; then
  cp build/release/bin/search_replay .device/bin/ && strip .device/bin/search_replay
fi
cp "$(command -v bwrap)" .device/bin/  # the sandbox; GPU images rarely carry it
# OpenSSH's server and client for tests/gpu/run_h200_remote.sh (an ssh host on the GPU machine's
# loopback); GPU images rarely carry them. sshd must be started by its absolute path.
ssh_bins=""
for b in /usr/sbin/sshd "$(command -v ssh || true)" "$(command -v ssh-keygen || true)"; do
  [ -x "$b" ] && cp "$b" .device/bin/ && ssh_bins="$ssh_bins .device/bin/$(basename "$b")"
done
ldd build/release/bin/openkernel $(ls .device/bin/search_replay 2>/dev/null) "$(command -v bwrap)" $ssh_bins | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .device/lib/ && strip --strip-unneeded ".device/lib/$(basename "$lib")"; done
for level in level1 level2; do
  [ -d "$kb/$level" ] && cp -r "$kb/$level" .device/kernelbench/
done
du -sh .device
