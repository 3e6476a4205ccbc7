#!/usr/bin/env bash
# Guests one at a time vs. side by side under tcg-icount (issue 26): seed
# 002 on open1 (examples/jobs/seed-002-open1.toml, 3 boots a side, one
# seeded boot order), kernels built first and not timed, then the job's
# boots with --parallel 1 and --parallel N. Prints each run's wall time, the
# verdict line and every boot's ops/s, the base side's spread (what an A/A
# of these boots would call noise), and the load average.
#   bench/turnaround.sh [N]        N guests at once (default 2)
#   PATCHPERF_CACHE                kernel cache (default /var/cache/patchperf)
# Target: N guests take about 1/N of the boots' time, and both runs' change
# agrees within the base side's spread (icount: guest time counts
# instructions, so a neighbour guest does not move the numbers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
n="${1:-2}"
out="$(mktemp -d /tmp/patchperf-turnaround.XXXXXX)"
trap 'rm -rf "$out"' EXIT

. "$ROOT/bench/lib.sh"
bench_runner

# One boot order for both runs, so that only the parallelism differs.
sed 's/^runs = 3$/runs = 3\nseed = 2026/' examples/jobs/seed-002-open1.toml >"$out/job.toml"
sed -i "s|\"\\.\\./patches/|\"$ROOT/examples/patches/|" "$out/job.toml"

echo "turnaround: building both kernels into $cache (not timed)"
"$runner" job "$out/job.toml" --cache "$cache" --build-only >/dev/null

# Per boot: its will-it-scale.per_process_ops, and each side's spread.
boots() {
    python3 "$ROOT/bench/job_boots.py" "$1"
}

for guests in 1 "$n"; do
    started="$(date +%s.%N)"
    "$runner" job "$out/job.toml" --cache "$cache" --parallel "$guests" -o "$out/p$guests" \
        >"$out/p$guests.log" 2>&1
    ended="$(date +%s.%N)"
    printf 'parallel %s: %.0f s for 6 boots\n' "$guests" "$(echo "$ended - $started" | bc)"
    "$runner" compare "$out/p$guests/base" "$out/p$guests/patched" | head -1 | sed 's/^/  /'
    boots "$out/p$guests"
done
echo "target: parallel $n about 1/$n of parallel 1's time; the changes agree within the spread"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
