#!/usr/bin/env bash
# Installs what OpenKernel needs on Debian 12 (idempotent; silent when already done) and builds it.
# Usage: scripts/setup.sh [--tests] [--target NAME]... [preset...]   (default preset: release)
#   profile "run" (always): the build, the engine, the worker, and every CPU candidate format
#   (plain PyTorch, openkernel_worker.native's g++ path, torch.utils.cpp_extension.load_inline/load);
#   --tests adds what only the test suites run (scripts/test.sh passes it).
#   --target builds only that target (and what it needs) instead of everything: scripts/main.sh
#   builds just the `openkernel` binary, not the tests.
# This is the one place that installs Debian packages (besides tests/slurm/local_slurm.sh, which
# installs SLURM on demand for its own test); tests/integration/test_setup_packages.py checks that
# every package the build, the candidate formats and the tests use is named here.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_PACKAGES=(
  # the C++ build (the release preset also builds the C++ tests: GoogleTest)
  cmake ninja-build g++ pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libfmt-dev nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev
  libcpp-httplib-dev libtomlplusplus-dev libkainjow-mustache-dev
  libssl-dev  # `openkernel hub`: SHA-256 and git SHA-1 object ids (OpenSSL's libcrypto)
  libncurses-dev  # kernel-code's terminal UI (ncursesw)
  # the worker and the candidate sandbox
  bubblewrap python3 python3-torch python3-numpy
  # load_inline / load candidates: python3-torch only recommends these (and setup.sh installs
  # without recommends): torch's C++ headers, pybind11, Python.h, setuptools (imported by
  # torch.utils.cpp_extension); ninja and g++ are above
  libtorch-dev pybind11-dev python3-dev python3-setuptools
  # `openkernel charts`: PNG (pngcairo) and SVG without a browser
  gnuplot-nox
  # npm ci of the dashboard's browser-side packages (below); Debian 12's nodejs lacks npm, which
  # is added when missing (a NodeSource nodejs bundles it)
  nodejs
  openssh-client  # --eval-host ssh://: the worker on a GPU host over the system's ssh
  binutils  # c++filt: the proton tier demangles CUDA kernel names (docs/profiling.md)
)
TEST_PACKAGES=(
  python3-pytest
  procps  # pgrep, in the sweep tests
  chromium  # the dashboard's browser tests (driven by playwright-core from npm)
  tmux  # a real terminal for kernel-code's terminal UI tests
  openssh-server  # the loopback sshd the remote evaluation tests start (test_remote_ssh.py)
)

packages=("${RUN_PACKAGES[@]}")
targets=()
tests=0
while (($#)); do
  case "$1" in
    --tests) packages+=("${TEST_PACKAGES[@]}"); tests=1; shift ;;
    --target)
      [ -n "${2:-}" ] || { echo "setup: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2"); shift 2 ;;
    -*) echo "setup: unknown option $1 (usage: scripts/setup.sh [--tests] [--target NAME]... [preset...])" >&2; exit 2 ;;
    *) break ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
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

# The npm packages, pinned by package-lock.json: Plotly's partial bundle
# plotly.js-cartesian-dist-min (the dashboard's Charts page) and highlight.js's prebuilt assets, which kernel-code dashboard serves (never a CDN), and with --tests
# playwright-core, which drives chromium in the browser tests, and hyparquet, the independent Parquet reader of the
# trace export's tests (tests/traces). Run again when the lock changes, or the tests' packages
# are wanted and missing (the tests' install serves the run profile too).
stamp="node_modules/.openkernel-setup"
lock="$(sha256sum package-lock.json | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
want="$lock tests=$tests"
if [ "$have" != "$want" ] && [ "$have" != "$lock tests=1" ]; then
  npm_args=(ci --no-audit --no-fund --ignore-scripts)
  ((tests)) || npm_args+=(--omit=dev)
  echo "setup: npm ${npm_args[*]}"
  npm "${npm_args[@]}" >/dev/null
  echo "$want" >"$stamp"
fi

presets=("$@")
((${#presets[@]})) || presets=(release)
for preset in "${presets[@]}"; do
  # configure a new build folder, and again when the presets changed (their cache variables, the
  # compiler flags among them, reach an existing folder only through `cmake --preset`)
  if [ ! -f "build/$preset/build.ninja" ] ||
     [ CMakePresets.json -nt "build/$preset/CMakeCache.txt" ]; then
    cmake --preset "$preset" >/dev/null
  fi
  # pipefail: the pipeline fails when the build does (the filter never fails it)
  if ! cmake --build --preset "$preset" "${targets[@]}" |
      { grep -Ev '^\[[0-9]+/[0-9]+\]|^ninja: no work to do' || true; }; then
    echo "setup: the $preset build failed" >&2
    exit 1
  fi
done

# The Python API (docs/python.md): the release build assembles the package in build/release/python;
# a .pth file in the user site-packages of the Python with torch names that folder, so that
# `import openkernel` works in that Python without PYTHONPATH and without pip (Debian's Python is
# externally managed). Rewritten by every set-up: the last checkout set up is the one imported.
api="$PWD/build/release/python"
if [ -f "$api/openkernel/__init__.py" ] && ls "$api"/openkernel/_core*.so >/dev/null 2>&1; then
  py="${OPENKERNEL_PYTHON:-/usr/bin/python3}"
  if site="$("$py" -m site --user-site 2>/dev/null)" && mkdir -p "$site" 2>/dev/null; then
    if [ "$(cat "$site/openkernel.pth" 2>/dev/null)" != "$api" ]; then
      echo "$api" >"$site/openkernel.pth"
      echo "setup: import openkernel: $site/openkernel.pth -> $api"
    fi
  else
    echo "setup: warning: no user site-packages for $py; use PYTHONPATH=$api" >&2
  fi
fi
