#!/usr/bin/env bash
# How short a tcg-icount run may be (issue 26 item 2): seed 002 on open1
# (examples/jobs/seed-002-open1.toml, 3 boots a side, one seeded boot
# order, both kernels cached and built first, not timed) measured at each
# run length, and for each: the wall time of its 6 boots, each side's
# boot-to-boot spread (what an A/A of these boots calls noise), and the
# change with its 95% interval and verdict as `patchperf-runner compare`
# judges it (tcg-icount's default δ: no A/A is run here).
#   bench/run-length.sh [LENGTH...]   SECONDS/WARMUP each (default: 1/0 1/1 2/1 5/2)
#   PATCHPERF_CACHE                   kernel cache (default /var/cache/patchperf)
#   PARALLEL                          guests at once (default 1)
# Target: the shortest length whose change and verdict agree with 5/2's
# within its spread is the default for tcg-icount; wall time per boot
# printed so that the saving is seen.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
lengths=("$@")
((${#lengths[@]})) || lengths=(1/0 1/1 2/1 5/2)
parallel="${PARALLEL:-1}"
runner="${CARGO_TARGET_DIR:-$ROOT/target}/release/patchperf-runner"
cache="${PATCHPERF_CACHE:-/var/cache/patchperf}"
out="$(mktemp -d /tmp/patchperf-run-length.XXXXXX)"
trap 'rm -rf "$out"' EXIT

[[ -x "$runner" ]] || cargo build --release -q -p patchperf-runner

# One job file per length, one boot order for all.
job() {
    sed -e 's/^runs = 3$/runs = 3\nseed = 2026/' \
        -e "s/^seconds = .*/seconds = $1/" -e "s/^warmup_seconds = .*/warmup_seconds = $2/" \
        -e "s|\"\\.\\./patches/|\"$ROOT/examples/patches/|" \
        examples/jobs/seed-002-open1.toml
}

job 5 2 >"$out/build.toml"
echo "run-length: building both kernels into $cache (not timed)"
"$runner" job "$out/build.toml" --cache "$cache" --build-only >/dev/null

printf '%-8s %9s %9s  %s\n' length "6 boots" "per boot" "verdict (runner compare)"
for l in "${lengths[@]}"; do
    s="${l%/*}" w="${l#*/}"
    job "$s" "$w" >"$out/$s-$w.toml"
    started="$(date +%s.%N)"
    "$runner" job "$out/$s-$w.toml" --cache "$cache" --parallel "$parallel" -o "$out/$s-$w" \
        >"$out/$s-$w.log" 2>&1 || { tail -20 "$out/$s-$w.log"; exit 1; }
    took="$(echo "$(date +%s.%N) - $started" | bc)"
    printf '%-8s %8.0fs %8.1fs  %s\n' "${s}s/${w}s" "$took" "$(echo "$took / 6" | bc -l)" \
        "$("$runner" compare "$out/$s-$w/base" "$out/$s-$w/patched" | head -1)"
    python3 "$ROOT/bench/job_boots.py" "$out/$s-$w"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
