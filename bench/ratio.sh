#!/usr/bin/env bash
# Harness overhead benchmark: patchperf's `bench` against a plain C loop of
# exactly the same system calls (bench/wis_loop.c, cc -O2) in the same
# harness semantics, 1 task, same scratch directory, run in turn (the order
# rotates every round). Prints ops/s and ratio = ours ÷ C for every
# workload but the variants of open1 and fstat (open2, open3, open-enoent,
# open-creat, fstatat-empty, statx-empty: the same loop with another
# flag or call) (of the means, and the median of the per-round ratios, which a
# round disturbed by other load on the machine does not move); the target
# is >= 0.99. Two C builds: `libc`, which calls glibc's wrappers as
# will-it-scale's tests do (the comparison), and `raw`, which issues the
# `syscall` instruction inline (for information: what entering and leaving
# the kernel from libc costs on this machine; open1, dup1 and fstat only).
#
# usage: bench/ratio.sh [ROUNDS]     (default 5)
# env:   RUN_SECONDS (default 5), RUN_WARMUP (default 2), WORKLOADS (default: every
#        workload of `bench --list` but those variants),
#        RATIO_RT (default 1: run both sides under SCHED_FIFO priority 1 with chrt,
#        so that other load on the machine does not decide the ratio; 0 to not),
#        BENCH_PROFILE (default release; `demo`: the runner ./patchperf demo builds)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ROUNDS="${1:-5}"
RUN_SECONDS="${RUN_SECONDS:-5}"
RUN_WARMUP="${RUN_WARMUP:-2}"
RATIO_RT="${RATIO_RT:-1}"

RT=()
if [[ "$RATIO_RT" == 1 ]] && chrt -f 1 true 2>/dev/null; then
    RT=(chrt -f 1)
fi

# The runner of BENCH_PROFILE, built from this tree (bench/lib.sh).
. "$ROOT/bench/lib.sh"
bench_runner
OURS="$runner"
# The C reference has every workload but open2, open3, open-enoent,
# open-creat, fstatat-empty and statx-empty (variants of open1 and fstat).
WORKLOADS="${WORKLOADS:-$("$OURS" bench --list | awk '$1 !~ /^(open[23]|open-enoent|open-creat|fstatat-empty|statx-empty)$/ { print $1 }' | tr '\n' ' ')}"
C_RAW="$ROOT/target/wis_loop_raw"
C_LIBC="$ROOT/target/wis_loop_libc"
cc -O2 -Wall -DRAW_SYSCALLS -o "$C_RAW" bench/wis_loop.c
cc -O2 -Wall -o "$C_LIBC" bench/wis_loop.c

scratch="$(mktemp -d /dev/shm/patchperf-ratio.XXXXXX 2>/dev/null || mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

ours() {
    "${RT[@]}" "$OURS" bench "$1" -t 1 --seconds "$RUN_SECONDS" --warmup "$RUN_WARMUP" --scratch "$scratch" |
        awk '$2 == "will-it-scale.1.processes" { print $1 }'
}

c_loop() {
    "${RT[@]}" "$1" "$2" "$scratch" "$RUN_SECONDS" "$RUN_WARMUP" | sed -n 's/^average://p'
}

echo "# $(date -u +%Y-%m-%d) $(uname -r) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
echo "# $ROUNDS rounds of ${RUN_WARMUP}s warm-up + ${RUN_SECONDS}s measured, 1 task, scratch $scratch, ${RT[*]:-no chrt}"
# ratio: of the means; median and range: of the per-round ratios ours/c_libc.
printf '%-8s %12s %12s %7s %7s %14s %12s %7s\n' workload ours_ops/s c_libc_ops/s ratio median range c_raw_ops/s ratio
for w in $WORKLOADS; do
    a=()
    b=()
    c=()
    sides=2
    case "$w" in open1 | dup1 | fstat) sides=3 ;; esac
    for ((r = 0; r < ROUNDS; r++)); do
        for ((k = 0; k < sides; k++)); do
            case $(((r + k) % sides)) in
            0) a+=("$(ours "$w")") ;;
            1) b+=("$(c_loop "$C_LIBC" "$w")") ;;
            2) c+=("$(c_loop "$C_RAW" "$w")") ;;
            esac
        done
    done
    awk -v w="$w" -v a="${a[*]}" -v b="${b[*]}" -v c="${c[*]}" 'BEGIN {
        n = split(a, x, " "); split(b, y, " "); raw = split(c, z, " ")
        for (i = 1; i <= n; i++) { sa += x[i]; sb += y[i]; sc += z[i]; r = x[i] / y[i]
            lo = (i == 1 || r < lo) ? r : lo; hi = (i == 1 || r > hi) ? r : hi }
        for (i = 1; i <= n; i++) q[i] = x[i] / y[i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && q[j - 1] > q[j]; j--) { t = q[j]; q[j] = q[j - 1]; q[j - 1] = t }
        med = (n % 2) ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2
        if (raw) printf "%-8s %12.0f %12.0f %7.3f %7.3f %6.3f..%.3f %12.0f %7.3f\n", w, sa / n, sb / n, sa / sb, med, lo, hi, sc / n, sa / sc
        else printf "%-8s %12.0f %12.0f %7.3f %7.3f %6.3f..%.3f %12s %7s\n", w, sa / n, sb / n, sa / sb, med, lo, hi, "-", "-"
    }'
done
