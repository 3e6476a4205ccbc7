#!/usr/bin/env bash
# What the retention policy (issue 28) frees: a real release
# `patchperf-server serve` with its private Postgres (bench/lib.sh) filled
# through its API as bench/server.sh fills it (testkit/examples/labscale/
# --fill-only: default 10^4 comparisons, ~10^6 metric values, ~3x10^6
# series points; --small: a tenth), then `patchperf-server prune
# --older-than-days 0` (every comparison is finished by then). Prints the
# database's size and its bulky tables' when filled, rewritten by VACUUM
# FULL (the baseline), after pruning, after a plain VACUUM (what
# autovacuum does: the space is reused, the files keep their size) and
# after VACUUM FULL again, the prune's wall time, and the load average. Checks that the JSON and report.txt of a few
# comparisons read the same before and after, byte for byte.
#
# usage: bench/retention.sh [--small] [labscale options]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
echo "retention: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

cargo build --release -p patchperf-server --bin patchperf-server -p patchperf-testkit --example labscale
server="${CARGO_TARGET_DIR:-$ROOT/target}/release/patchperf-server"
. "$ROOT/bench/lib.sh"
bench_start_server retention

filled=$SECONDS
"$ROOT/target/release/examples/labscale" "$url" "$ci_token" "$runner_token" \
    --server-pid "$server_pid" --postgres-pid "$(bench_postmaster_pid)" \
    --clk-tck "$bench_hz" --fill-only "$@"
echo "retention: filled in $((SECONDS - filled)) s"

pg_bin="/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin"
sql() {
    "$pg_bin/psql" -h "$data/pg/run" -U postgres -d patchperf -XAtq -c "$1"
}
mb() { awk '{ printf "%.1f", $1 / 1048576 }'; }
sizes() {
    local db mv rs runs rep
    db="$(sql "SELECT pg_database_size('patchperf')" | mb)"
    mv="$(sql "SELECT pg_total_relation_size('metric_values')" | mb)"
    rs="$(sql "SELECT pg_total_relation_size('run_series')" | mb)"
    runs="$(sql "SELECT pg_total_relation_size('runs')" | mb)"
    rep="$(sql "SELECT pg_total_relation_size('comparison_reports')" | mb)"
    printf '| %-26s | %9s | %13s | %10s | %8s | %18s |\n' "$1" "$db" "$mv" "$rs" "$runs" "$rep"
}

# A few comparisons' answers, to compare after pruning.
ids="$(sql "SELECT id FROM comparisons WHERE status = 'done' ORDER BY id DESC LIMIT 5")"
answers() {
    local id
    for id in $ids; do
        curl -fsS "$url/api/v1/comparisons/$id"
        curl -fsS "$url/api/v1/comparisons/$id/report.txt"
    done | sha256sum | cut -d' ' -f1
}
before_answers="$(answers)"
values="$(sql "SELECT count(*) FROM metric_values")"
profile="$(sql "SELECT count(*) FROM metric_values WHERE name LIKE 'perf-profile.%'")"
series="$(sql "SELECT count(*) FROM run_series")"

table="$data/sizes.md"
printf '| %-26s | %9s | %13s | %10s | %8s | %18s |\n' "MB" database metric_values run_series runs comparison_reports | tee "$table"
printf '|%s|\n' "----------------------------|-----------|---------------|------------|----------|--------------------" | tee -a "$table"
sizes "filled" | tee -a "$table"
# The baseline without the bloat of the fill (rows updated as jobs ran).
sql "VACUUM FULL"
sizes "filled, VACUUM FULL" | tee -a "$table"
pruning=$SECONDS
"$server" prune --older-than-days 0 --data-dir "$data" >"$data/prune.out" 2>>"$data/server.log"
prune_seconds=$((SECONDS - pruning))
sizes "pruned" | tee -a "$table"
sql "VACUUM"
sizes "pruned, VACUUM" | tee -a "$table"
full=$SECONDS
sql "VACUUM FULL"
full_seconds=$((SECONDS - full))
sizes "pruned, VACUUM FULL" | tee -a "$table"

echo
echo "retention: $(cat "$data/prune.out")"
echo "retention: before: $values metric values ($profile perf-profile), $series per-second series"
echo "retention: prune took $prune_seconds s, VACUUM FULL $full_seconds s"
after_answers="$(answers)"
if [[ "$before_answers" != "$after_answers" ]]; then
    echo "retention: FAIL: JSON or report.txt changed by pruning" >&2
    exit 1
fi
echo "retention: JSON and report.txt of comparisons $(echo $ids | tr ' ' ',') read the same after pruning"
echo "retention: load average at end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
