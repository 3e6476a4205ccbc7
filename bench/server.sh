#!/usr/bin/env bash
# Lab-scale benchmark (issue 13), the one server changes are judged by: a
# real `patchperf-server serve` (release build) with its private Postgres
# under a temporary directory (bench/lib.sh), filled through its API by
# testkit/examples/labscale/ as a lab's runners and CI would (default 10^4
# comparisons, ~10^6 metric values; --small: a tenth), then measured:
# ingest values/s with 1 and 8 uploaders and server + Postgres CPU per
# value; idle CPU once filled; p50/p99/max and CPU-ms per request of every
# page and API endpoint (listings with each filter, a typical and a large
# comparison's page, plots, JSON, report.txt, job log, machine pages), one
# client after another and 16 at once; the first verdict listing after an
# A/A comparison finishes on a busy machine and when the listings show the
# verdicts its noise floor gives. Prints tables with the issue's targets
# and the load average; exits non-zero if any request failed.
#
# usage: bench/server.sh [--small] [labscale options]
#   e.g. --comparisons N --typical N --large N --machines N --ingest N
#        --seconds S (see testkit/examples/labscale/main.rs)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

cargo build --release -p patchperf-server --bin patchperf-server -p patchperf-testkit --example labscale
. "$ROOT/bench/lib.sh"
bench_start_server labscale

"$ROOT/target/release/examples/labscale" "$url" "$ci_token" "$runner_token" \
    --server-pid "$server_pid" --postgres-pid "$(bench_postmaster_pid)" \
    --clk-tck "$bench_hz" "$@"
