#!/usr/bin/env bash
# How short a tcg-icount run may be (issue 26 item 2): a job file's patch
# (default seed 002 on open1, examples/jobs/seed-002-open1.toml; 3 boots a
# side, one seeded boot order, both kernels cached and built first, not
# timed) measured at each run length, and for each: the wall time of its 6 boots, each side's
# boot-to-boot spread (what an A/A of these boots calls noise), and the
# change with its 95% interval and verdict as `patchperf-runner compare`
# judges it (tcg-icount's default δ: no A/A is run here).
#   bench/run-length.sh [LENGTH...]   SECONDS/WARMUP each (default: 1/0 1/1 2/1 5/2)
#   PATCHPERF_CACHE                   kernel cache (default /var/cache/patchperf)
#   PARALLEL                          guests at once (default 1)
#   JOB                               the job file (default examples/jobs/seed-002-open1.toml)
# Target: the shortest length whose change and verdict agree with 5/2's
# within its spread is the default for tcg-icount; wall time per boot
# printed so that the saving is seen.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
lengths=("$@")
((${#lengths[@]})) || lengths=(1/0 1/1 2/1 5/2)
parallel="${PARALLEL:-1}"
jobfile="${JOB:-examples/jobs/seed-002-open1.toml}"
out="$(mktemp -d /tmp/patchperf-run-length.XXXXXX)"
trap 'rm -rf "$out"' EXIT

. "$ROOT/bench/lib.sh"
bench_runner

# One job file per length, one boot order for all.
job() {
    {
        grep -q '^seed = ' "$jobfile" || echo "seed = 2026"
        sed -e "s/^seconds = .*/seconds = $1/" -e "s/^warmup_seconds = .*/warmup_seconds = $2/" \
            -e "s|\"\\.\\./patches/|\"$ROOT/examples/patches/|" "$jobfile"
    } | python3 -c '
import sys
lines = sys.stdin.read().splitlines()
# A seed line printed first belongs with the top-level keys, before [params].
if lines and lines[0].startswith("seed = "):
    seed, lines = lines[0], lines[1:]
    at = next((i for i, l in enumerate(lines) if l.startswith("[")), len(lines))
    lines.insert(at, seed)
print("\n".join(lines))'
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
    compared="$("$runner" compare "$out/$s-$w/base" "$out/$s-$w/patched" || true)"
    printf '%-8s %8.0fs %8.1fs  %s\n' "${s}s/${w}s" "$took" "$(echo "$took / 6" | bc -l)" \
        "$(grep -m1 -E '^ +[a-z]+ +will-it-scale\.per_process_ops ' <<<"$compared" |
            sed -e 's/^ *//' -e 's/ (Welch.*//')"
    python3 "$ROOT/bench/job_boots.py" "$out/$s-$w"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
