#!/usr/bin/env bash
# Load benchmark: a real `patchperf-server serve` (release build) with its
# private Postgres under a temporary data directory, listening on 127.0.0.1
# only, driven by server/examples/load.rs: 100 simulated runners (register,
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

cargo build --release -p patchperf-server --bin patchperf-server --example load
server="$ROOT/target/release/patchperf-server"
load="$ROOT/target/release/examples/load"

# The private Postgres runs as user postgres, which must reach the directory.
data="$(mktemp -d /tmp/patchperf-load.XXXXXX)"
chmod 755 "$data"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
server_pid=""

cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    # The server stops its Postgres on the way out; make sure of it.
    if [[ -f "$data/pg/data/postmaster.pid" ]]; then
        local bin
        bin="/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin"
        if [[ "$(id -u)" == 0 ]]; then
            runuser -u postgres -- "$bin/pg_ctl" -D "$data/pg/data" -m fast stop >/dev/null 2>&1 || true
        else
            "$bin/pg_ctl" -D "$data/pg/data" -m fast stop >/dev/null 2>&1 || true
        fi
    fi
    rm -rf "$data"
}
trap cleanup EXIT

echo "load: server on $url, data in $data (log $data/server.log)"
RUST_LOG="${RUST_LOG:-warn}" "$server" serve --listen "127.0.0.1:$port" --data-dir "$data" \
    >>"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
    curl -fsS "$url/healthz" >/dev/null 2>&1 && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        tail -20 "$data/server.log" >&2
        echo "load: the server did not start (log above)" >&2
        exit 1
    fi
    sleep 0.5
done
curl -fsS "$url/healthz" >/dev/null

ci_token="$("$server" token create --kind ci --name load-ci --data-dir "$data" 2>/dev/null)"
runner_token="$("$server" token create --kind runner --name load-runner --data-dir "$data" 2>/dev/null)"

# CPU seconds (user + system) a process and its children used so far:
# fields 14-17 of /proc/PID/stat are utime, stime, cutime, cstime in ticks.
ticks() {
    local total=0 pid
    for pid in "$@"; do
        [[ -r "/proc/$pid/stat" ]] || continue
        total=$((total + $(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13 + $14 + $15}')))
    done
    echo "$total"
}
postgres_pids() {
    local main
    main="$(head -1 "$data/pg/data/postmaster.pid")"
    echo "$main" $(pgrep -P "$main")
}
hz="$(getconf CLK_TCK)"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
server_before="$(ticks "$server_pid")"
pg_before="$(ticks $(postgres_pids))"

"$load" "$url" "$ci_token" "$runner_token" --seconds "$SECONDS_WANTED" \
    --runners "${LOAD_RUNNERS:-100}" --browsers "${LOAD_BROWSERS:-50}" \
    --runner-pause-ms "${LOAD_RUNNER_PAUSE_MS:-500}" \
    --browser-pause-ms "${LOAD_BROWSER_PAUSE_MS:-500}"

server_after="$(ticks "$server_pid")"
pg_after="$(ticks $(postgres_pids))"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v s=$((server_after - server_before)) -v p=$((pg_after - pg_before)) -v hz="$hz" \
    -v secs="$SECONDS_WANTED" 'BEGIN {
        printf "cpu: server %.1f s, postgres %.1f s over %d s (%.0f%% and %.0f%% of one core)\n",
            s / hz, p / hz, secs, 100 * s / hz / secs, 100 * p / hz / secs }'
echo "load average (1, 5, 15 min): before $load_before, after $load_after; $(nproc) cores"
