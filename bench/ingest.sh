#!/usr/bin/env bash
# Ingest benchmark: a real `patchperf-server serve` (release build) with its
# private Postgres under a temporary data directory, on 127.0.0.1 only,
# driven by testkit/examples/ingest.rs: uploaders that only claim jobs and
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

cargo build --release -p patchperf-server --bin patchperf-server -p patchperf-testkit --example ingest
. "$ROOT/bench/lib.sh"
bench_start_server ingest

echo "ingest: $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/target/release/examples/ingest" "$url" "$ci_token" "$runner_token" \
    --server-pid "$server_pid" --postgres-pid "$(bench_postmaster_pid)" \
    --uploaders "${INGEST_UPLOADERS:-1,8}" --seconds "$SECONDS_WANTED" "$@"
echo "ingest: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
