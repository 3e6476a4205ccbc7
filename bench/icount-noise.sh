#!/usr/bin/env bash
# How still tcg-icount really is (issue 27 item 10): with real kernels under
# QEMU, a real `patchperf-server serve` (release, private Postgres;
# bench/lib.sh) and a real `patchperf-runner agent` measure, at each run
# length,
#   A/A:      K comparisons of the base kernel with itself, all 9 workloads;
#   seed 003: fs/stat.c (vfs_fstat) on the open and dup paths it cannot touch;
#   seed 004: fs/file.c (alloc_fd) on the stat paths it cannot touch;
#   layout:   bench/layout-pad.patch, 2 KiB + 24 bytes of never-run code early
#             in the link, so that everything after it moves: placement only;
# each A/B judged with the δ the A/As before it calibrated. It prints one
# table per comparison (workload, means, %change, 95% interval, each side's
# boot-to-boot spread, δ, verdict), the wall time and load average of each,
# and keeps every comparison's JSON under OUT for bench/icount_noise_summary.py.
#
# usage: bench/icount-noise.sh [--seconds "2 5"] [--runs N] [--aa K]
#                              [--max-runs M] [--out DIR] [--only aa|ab]
#   --max-runs M: A/Bs may add boots while undecided, up to M a side (by
#   default their runs are final, so that each look is measured as it is)
#   PATCHPERF_CACHE: the runner's kernel cache (default /var/cache/patchperf)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

lengths="2 5"
runs=3
aas=2
max_runs=""
only=""
out=/tmp/icount-noise
while (($#)); do
    case "$1" in
        --seconds) lengths="$2"; shift ;;
        --runs) runs="$2"; shift ;;
        --aa) aas="$2"; shift ;;
        --max-runs) max_runs="$2"; shift ;;
        --out) out="$2"; shift ;;
        --only) only="$2"; shift ;;
        *) echo "usage: $0 [--seconds \"2 5\"] [--runs N] [--aa K] [--max-runs M] [--out DIR] [--only aa|ab]" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"

cargo build --release -p patchperf-server -p patchperf-runner
all="$("$ROOT/target/release/patchperf-runner" bench --list | awk '{ print $1 }' | paste -sd, -)"
. "$ROOT/bench/lib.sh"
bench_start_server icount-noise
bench_runner
bench_start_agent bench-lab
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure LABEL FILE SUBMIT-ARGS...: submits, waits, prints the table,
# keeps the JSON as OUT/FILE.json.
measure() {
    local label="$1" file="$2" started=$SECONDS load id out_text
    shift 2
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "== $label"
    out_text="$("$runner" submit --server "$url" --token "$ci_token" --machine bench-lab \
        --runs "$runs" --warmup 1 --measurement tcg-icount --wait --poll 5 "$@")" || {
        echo "$out_text"
        echo "icount-noise: $label did not complete (runner log: $data/runner.log)" >&2
        exit 1
    }
    id="$(sed -n 's/^comparison \([0-9]*\) submitted$/\1/p' <<<"$out_text" | head -1)"
    curl -fsS "$url/api/v1/comparisons/$id" >"$out/$file.json"
    python3 "$ROOT/bench/icount_noise_summary.py" --table "$out/$file.json"
    echo "wall time: $((SECONDS - started)) s; load average before: $load, after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

for _ in $(seq 1 60); do
    curl -fsS "$url/api/v1/machines" | grep -q bench-lab && break
    sleep 1
done

# The runs asked for are final unless --max-runs says how far they may grow.
grow=(--max-runs "${max_runs:-$runs}")
for s in $lengths; do
    if [[ "$only" != ab ]]; then
        for k in $(seq 1 "$aas"); do
            measure "A/A $k, ${s} s runs, all 9 workloads" "aa-${s}s-$k" --aa -w "$all" --seconds "$s"
        done
    fi
    if [[ "$only" != aa ]]; then
        measure "seed 003 (vfs_fstat), ${s} s runs, on paths it cannot touch" "seed003-${s}s" \
            -w open1,open2,open3,open-enoent,open-creat,dup1 --seconds "$s" "${grow[@]}" \
            --mbox examples/patches/003-vfs-mostly-undo-glibc-turning-fstat-into-fstatat-AT_EMPTY_PATH.patch
        measure "seed 004 (alloc_fd), ${s} s runs, on paths it cannot touch" "seed004-${s}s" \
            -w fstat,fstatat-empty,statx-empty --seconds "$s" "${grow[@]}" \
            --mbox examples/patches/004-fs-file.c-remove-sanity_check-and-add-likely-unlikely-in-alloc_fd.patch
        measure "code placement only (bench/layout-pad.patch), ${s} s runs, all 9 workloads" \
            "layout-${s}s" -w "$all" --seconds "$s" "${grow[@]}" --mbox bench/layout-pad.patch
    fi
done
echo
python3 "$ROOT/bench/icount_noise_summary.py" "$out"/*.json
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
