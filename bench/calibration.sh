#!/usr/bin/env bash
# Calibration measurements (issue 17) with real kernels under QEMU: a real
# `patchperf-server serve` (release, private Postgres; bench/lib.sh) and a
# real `patchperf-runner agent` on this machine measure
#   icount: an A/A comparison over all 9 workloads under tcg-icount, then
#           seed 004 (fs/file.c: alloc_fd without sanity_check, likely/
#           unlikely) on open1, open-enoent, open-creat and dup1, judged
#           with the δ that A/A calibrated;
#   tcg:    the same A/A under plain tcg (guest time is real time: noisy
#           like a busy lab machine), then seed 003 (fstat without the
#           AT_EMPTY_PATH lookup) on fstatat-empty with boots added while
#           undecided (--max-runs).
# It prints one table per comparison (workload, base and patched mean,
# %change, 95% interval, δ and where it came from, runs a side, verdict),
# the wall time of each, and the load average before and after.
#
# usage: bench/calibration.sh [icount|tcg|all] [--runs N] [--seconds S]
#   PATCHPERF_CACHE: the runner's kernel cache (default /var/cache/patchperf;
#   /var/cache/patchperf-test reuses the kernel tests' builds)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

which="all"
runs=3
seconds=3
while (($#)); do
    case "$1" in
        icount | tcg | all) which="$1" ;;
        --runs) runs="$2"; shift ;;
        --seconds) seconds="$2"; shift ;;
        *) echo "usage: $0 [icount|tcg|all] [--runs N] [--seconds S]" >&2; exit 2 ;;
    esac
    shift
done

cargo build --release -p patchperf-server -p patchperf-runner
all_workloads="$("$ROOT/target/release/patchperf-runner" bench --list | awk '{ print $1 }' | paste -sd, -)"
. "$ROOT/bench/lib.sh"
bench_start_server calibration
bench_runner
bench_start_agent bench-lab
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure LABEL SUBMIT-ARGS...: submits, waits, prints the table.
measure() {
    local label="$1" started=$SECONDS out id
    shift
    echo
    echo "== $label"
    out="$("$runner" submit --server "$url" --token "$ci_token" --machine bench-lab \
        --runs "$runs" --seconds "$seconds" --warmup 1 --wait --poll 5 "$@")" || {
        echo "$out"
        echo "calibration: $label did not complete (runner log: $data/runner.log)" >&2
        exit 1
    }
    id="$(sed -n 's/^comparison \([0-9]*\) submitted$/\1/p' <<<"$out" | head -1)"
    curl -fsS "$url/api/v1/comparisons/$id" | python3 "$ROOT/bench/calibration_table.py"
    echo "wall time: $((SECONDS - started)) s; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The agent registers its machine on its first call.
for _ in $(seq 1 60); do
    curl -fsS "$url/api/v1/machines" | grep -q bench-lab && break
    sleep 1
done

if [[ "$which" == icount || "$which" == all ]]; then
    measure "A/A, tcg-icount, all 9 workloads" --aa -w "$all_workloads" --measurement tcg-icount
    measure "seed 004, tcg-icount" --measurement tcg-icount -w open1,open-enoent,open-creat,dup1 \
        --mbox examples/patches/004-fs-file.c-remove-sanity_check-and-add-likely-unlikely-in-alloc_fd.patch
fi
if [[ "$which" == tcg || "$which" == all ]]; then
    measure "A/A, tcg (wall clock), all 9 workloads" --aa -w "$all_workloads" --measurement tcg
    measure "seed 003, tcg (wall clock)" --measurement tcg -w fstatat-empty --max-runs 24 \
        --mbox examples/patches/003-vfs-mostly-undo-glibc-turning-fstat-into-fstatat-AT_EMPTY_PATH.patch
fi
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
