# Shared by the benchmarks; source it, do not run it. `bench_runner` sets
# `runner` (the patchperf-runner of BENCH_PROFILE, built from this tree) and `cache`
# (PATCHPERF_CACHE, exported; default /var/cache/patchperf). `bench_start_server NAME` starts a
# `patchperf-server serve` of BENCH_PROFILE (built from this tree) with its private Postgres under a temporary data
# directory, listening on 127.0.0.1 only, and stops both and removes the
# directory when the calling script exits. It sets:
#   data          the data directory (server log in $data/server.log, copied
#                 to /tmp/patchperf-NAME-server.log when the script exits)
#   url           http://127.0.0.1:PORT
#   server_pid    the server process
#   ci_token      a ci token
#   runner_token  a runner token
# A script whose own EXIT trap this replaces names its scratch directory in
# `bench_also_remove`. `bench_ticks PID...` and `bench_postgres_pids` give CPU ticks and the
# Postgres processes to count, `bench_hz` ticks per second.

bench_hz="$(getconf CLK_TCK)"
# BENCH_PROFILE (release): the cargo profile built and measured; `demo`
# measures what `./patchperf demo` runs. Its binaries' directory:
BENCH_PROFILE="${BENCH_PROFILE:-release}"
bench_bin_dir="${CARGO_TARGET_DIR:-$ROOT/target}/$([[ "$BENCH_PROFILE" == dev ]] && echo debug || echo "$BENCH_PROFILE")"
server_pid=""
data=""
bench_name=""

bench_cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    # The server stops its Postgres on the way out; make sure of it.
    if [[ -n "$data" && -f "$data/pg/data/postmaster.pid" ]]; then
        local bin
        bin="/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin"
        if [[ "$(id -u)" == 0 ]]; then
            runuser -u postgres -- "$bin/pg_ctl" -D "$data/pg/data" -m fast stop >/dev/null 2>&1 || true
        else
            "$bin/pg_ctl" -D "$data/pg/data" -m fast stop >/dev/null 2>&1 || true
        fi
    fi
    # A script's own scratch directory (its EXIT trap is replaced by ours).
    if [[ -n "${bench_also_remove:-}" ]]; then
        rm -rf "$bench_also_remove"
    fi
    # The server's log outlives the run, for whoever reads an error.
    if [[ -n "$data" ]]; then
        cp "$data/server.log" "/tmp/patchperf-$bench_name-server.log" 2>/dev/null || true
        rm -rf "$data"
    fi
}

# bench_start_server NAME: the server binary is $bench_bin_dir/patchperf-server.
bench_start_server() {
    local name="$1" server="$bench_bin_dir/patchperf-server" port
    bench_name="$name"
    SQLX_OFFLINE=true cargo build --profile "$BENCH_PROFILE" -q -p patchperf-server
    # The private Postgres runs as user postgres, which must reach the directory.
    data="$(mktemp -d "/tmp/patchperf-$name.XXXXXX")"
    chmod 755 "$data"
    trap bench_cleanup EXIT
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    url="http://127.0.0.1:$port"
    echo "$name: server on $url, data in $data (log $data/server.log)"
    # --no-auto-calibrate: the fills submit their own A/A comparisons, and a
    # benchmark measures the work it queued.
    RUST_LOG="${RUST_LOG:-warn}" "$server" serve --listen "127.0.0.1:$port" --data-dir "$data" \
        --no-auto-calibrate \
        >>"$data/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 120); do
        curl -fsS "$url/healthz" >/dev/null 2>&1 && break
        if ! kill -0 "$server_pid" 2>/dev/null; then
            tail -20 "$data/server.log" >&2
            echo "$name: the server did not start (log above)" >&2
            exit 1
        fi
        sleep 0.5
    done
    curl -fsS "$url/healthz" >/dev/null
    ci_token="$("$server" token create --kind ci --label "$name-ci" --data-dir "$data" 2>/dev/null)"
    runner_token="$("$server" token create --kind runner --label "$name-runner" --data-dir "$data" 2>/dev/null)"
}

bench_runner() {
    runner="$bench_bin_dir/patchperf-runner"
    # Always asked: a binary left from an older tree would be measured
    # instead of this one (cargo does nothing when it is up to date).
    cargo build --profile "$BENCH_PROFILE" -q -p patchperf-runner
    export PATCHPERF_CACHE="${PATCHPERF_CACHE:-/var/cache/patchperf}"
    cache="$PATCHPERF_CACHE"
}

# bench_start_agent MACHINE [AGENT OPTION...]: after bench_start_server and
# bench_runner, a runner agent serving $url as MACHINE (log
# $data/runner.log, pid in runner_pid), stopped before the server when the
# script exits.
bench_start_agent() {
    "$runner" agent --server "$url" --token "$runner_token" --machine "$1" \
        --spool "$data/spool" "${@:2}" >>"$data/runner.log" 2>&1 &
    runner_pid=$!
    trap 'kill -TERM "$runner_pid" 2>/dev/null || true; wait "$runner_pid" 2>/dev/null || true; bench_cleanup' EXIT
}

# CPU ticks (user + system) processes and their reaped children used so far:
# fields 14-17 of /proc/PID/stat are utime, stime, cutime, cstime.
bench_ticks() {
    local total=0 pid
    for pid in "$@"; do
        [[ -r "/proc/$pid/stat" ]] || continue
        total=$((total + $(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13 + $14 + $15}')))
    done
    echo "$total"
}

# The postmaster first, then its backends and helpers.
bench_postmaster_pid() {
    head -1 "$data/pg/data/postmaster.pid"
}
bench_postgres_pids() {
    local main
    main="$(bench_postmaster_pid)"
    echo "$main" $(pgrep -P "$main")
}
