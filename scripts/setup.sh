#!/usr/bin/env bash
# Installs what OpenKernel needs on Debian 12 (idempotent; silent when already done) and builds it.
# Usage: scripts/setup.sh [preset...]   (default preset: release)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libfmt-dev nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev
  libcpp-httplib-dev libtomlplusplus-dev libkainjow-mustache-dev
  bubblewrap python3 python3-torch python3-numpy python3-pytest
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root or install: ${missing[*]}" >&2; exit 2; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

presets=("$@")
((${#presets[@]})) || presets=(release)
for preset in "${presets[@]}"; do
  if [ ! -f "build/$preset/build.ninja" ]; then
    cmake --preset "$preset" >/dev/null
  fi
  cmake --build --preset "$preset" | grep -Ev '^\[[0-9]+/[0-9]+\]|^ninja: no work to do' || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "setup: the $preset build failed" >&2; exit 1; }
done
