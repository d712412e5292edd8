#!/usr/bin/env bash
# Copies the built engine and the shared libraries it needs (all but glibc's own) into .device/,
# with the KernelBench problems a GPU run needs, so the `device` tool can carry them to a machine
# that has none of our Debian packages. Usage: scripts/bundle-device.sh [kernelbench-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
kb=${1:-../shared/kernelbench}
rm -rf .device && mkdir -p .device/bin .device/lib .device/kernelbench
cp build/release/bin/openkernel .device/bin/ && strip .device/bin/openkernel
cp "$(command -v bwrap)" .device/bin/  # the sandbox; GPU images rarely carry it
ldd build/release/bin/openkernel "$(command -v bwrap)" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .device/lib/ && strip --strip-unneeded ".device/lib/$(basename "$lib")"; done
for level in level1 level2; do
  [ -d "$kb/$level" ] && cp -r "$kb/$level" .device/kernelbench/
done
du -sh .device
