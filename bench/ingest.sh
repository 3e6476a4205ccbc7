#!/usr/bin/env bash
# Ingest benchmark: a real `patchperf-server serve` (release build) with its
# private Postgres under a temporary data directory, on 127.0.0.1 only,
# driven by server/examples/ingest.rs: uploaders that only claim jobs and
# upload lab-sized runs (~250 metrics, 15 series of 30 points), first 1 of
# them, then 8. Prints per phase the metric values stored a second and the
# CPU the server and Postgres spent per value, and the load average.
# Target: 10,000 values/s with 8 uploaders.
#
# usage: bench/ingest.sh [SECONDS] [--bare]   (per phase; default 20, at most 600)
#        --bare: runs of 2 metrics and 1 series, to see what an upload
#        costs apart from its values (what batching could save at most).
# env:   INGEST_UPLOADERS (1,8): the phases' uploader counts.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_WANTED="${1:-20}"
shift || true
if ! [[ "$SECONDS_WANTED" =~ ^[0-9]+$ ]] || ((SECONDS_WANTED < 1 || SECONDS_WANTED > 600)); then
    echo "usage: bench/ingest.sh [SECONDS] [--bare]   (1 to 600)" >&2
    exit 2
fi

cargo build --release -p patchperf-server --bin patchperf-server --example ingest
server="$ROOT/target/release/patchperf-server"

# The private Postgres runs as user postgres, which must reach the directory.
data="$(mktemp -d /tmp/patchperf-ingest.XXXXXX)"
chmod 755 "$data"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$data"
}
trap cleanup EXIT

RUST_LOG="${RUST_LOG:-warn}" "$server" serve --listen "127.0.0.1:$port" --data-dir "$data" \
    >>"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
    curl -fsS "$url/healthz" >/dev/null 2>&1 && break
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$data/server.log" >&2; exit 1; }
    sleep 0.5
done
curl -fsS "$url/healthz" >/dev/null
ci_token="$("$server" token create --kind ci --name ingest-ci --data-dir "$data" 2>/dev/null)"
runner_token="$("$server" token create --kind runner --name ingest-runner --data-dir "$data" 2>/dev/null)"

echo "ingest: $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/target/release/examples/ingest" "$url" "$ci_token" "$runner_token" \
    --server-pid "$server_pid" --postgres-pid "$(head -1 "$data/pg/data/postmaster.pid")" \
    --uploaders "${INGEST_UPLOADERS:-1,8}" --seconds "$SECONDS_WANTED" "$@"
echo "ingest: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
