#!/usr/bin/env bash
# Load benchmark: a real `patchperf-server serve` (release build, or
# BENCH_PROFILE's: bench/lib.sh) with its
# private Postgres under a temporary data directory, listening on 127.0.0.1
# only (started by bench/lib.sh), driven by testkit/examples/load.rs: 100 simulated runners (register,
# claim, state, heartbeat, upload runs, finish; each submits the next
# comparison for its machine with the CI token when it has no job) and 50
# browsers (dashboard, comparison page, its JSON, its text report, its runs
# plot) for 60 s. Prints requests, errors, req/s and p50/p99/max latency per
# kind of request, the CPU time the server and Postgres used, and the load
# average before and after. Targets: 0 errors, heartbeat p99 < 100 ms,
# page p99 < 200 ms.
#
# usage: bench/load.sh [SECONDS]     (default 60, at most 600)
# env:   LOAD_RUNNERS (100), LOAD_BROWSERS (50), LOAD_RUNNER_PAUSE_MS (500),
#        LOAD_BROWSER_PAUSE_MS (500): the pause of each simulated client
#        between two requests (a runner boots kernels, a person reads).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_WANTED="${1:-60}"
if ! [[ "$SECONDS_WANTED" =~ ^[0-9]+$ ]] || ((SECONDS_WANTED < 1 || SECONDS_WANTED > 600)); then
    echo "usage: bench/load.sh [SECONDS]   (1 to 600)" >&2
    exit 2
fi

. "$ROOT/bench/lib.sh"
# The load generator is always the release build: only the server's
# profile is what is measured.
cargo build --release -p patchperf-testkit --example load
load="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/load"
bench_start_server load
hz="$bench_hz"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
server_before="$(bench_ticks "$server_pid")"
pg_before="$(bench_ticks $(bench_postgres_pids))"

"$load" "$url" "$ci_token" "$runner_token" --seconds "$SECONDS_WANTED" \
    --runners "${LOAD_RUNNERS:-100}" --browsers "${LOAD_BROWSERS:-50}" \
    --runner-pause-ms "${LOAD_RUNNER_PAUSE_MS:-500}" \
    --browser-pause-ms "${LOAD_BROWSER_PAUSE_MS:-500}"

server_after="$(bench_ticks "$server_pid")"
pg_after="$(bench_ticks $(bench_postgres_pids))"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v s=$((server_after - server_before)) -v p=$((pg_after - pg_before)) -v hz="$hz" \
    -v secs="$SECONDS_WANTED" 'BEGIN {
        printf "cpu: server %.1f s, postgres %.1f s over %d s (%.0f%% and %.0f%% of one core)\n",
            s / hz, p / hz, secs, 100 * s / hz / secs, 100 * p / hz / secs }'
echo "load average (1, 5, 15 min): before $load_before, after $load_after; $(nproc) cores"
