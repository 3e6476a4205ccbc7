#!/usr/bin/env bash
# How long a kernel developer waits for a verdict (issue 26), on this
# machine, printed with the load average. Three parts, all by default:
#   guests   seed 002 on open1 as a runner job (examples/jobs/
#            seed-002-open1.toml, 3 boots a side, one seeded boot order),
#            kernels built first and not timed, the boots with
#            --parallel 1 and --parallel N: each run's wall time, verdict,
#            every boot's ops/s and each side's spread.
#   verdict  a release server and agent (--parallel N) as CI uses them:
#            the machine calibrated first (an A/A of open1), then seed 002
#            submitted and waited for (`submit --wait`) with both kernels
#            cached, then a patch never built before (seed 002 with a line
#            of code added, so its patched kernel is built and the changed
#            file compiled), each timed from submit to verdict. The run
#            length is left to the measurement mode, as a user leaves it.
#   series   seeds 001-004 as one 4-patch series, per patch (the whole
#            series and 4 steps), on open1, fstatat-empty and dup1, on the
#            same server and agent; patch 1 with a line of code added, so
#            every step's kernel is built as for a series never seen.
#   beside   two comparisons queued at once (seed 002 on open1, seed 003
#            on fstatat-empty) on the same server and agent, which holds a
#            job of each (`agent --parallel N` on a tcg-icount machine):
#            one after the other, then both submitted together, each timed
#            to its last verdict; with both kernels cached, then with each
#            patch given a line of code (its kernel built, as a list bot
#            meets every new series).
#   bench/turnaround.sh [N] [guests|verdict|series|beside...]
#   PATCHPERF_CACHE        kernel cache (default /var/cache/patchperf; one
#                          no test is using at the same time)
# Targets: N guests take about 1/N of the boots' time and both runs' change
# agrees within the spread; seed 002 to its verdict in at most 60 s on 2
# cores with both kernels cached and the machine calibrated.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
n=2
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    n="$1"
    shift
fi
parts=("$@")
((${#parts[@]})) || parts=(guests verdict series beside)
out="$(mktemp -d /tmp/patchperf-turnaround.XXXXXX)"
trap 'rm -rf "$out"' EXIT
bench_also_remove="$out"

. "$ROOT/bench/lib.sh"
bench_runner
patches="$ROOT/examples/patches"

wants() {
    [[ " ${parts[*]} " == *" $1 "* ]]
}

now() {
    date +%s.%N
}

since() {
    printf '%.0f' "$(echo "$(now) - $1" | bc)"
}

load() {
    cut -d' ' -f1-3 /proc/loadavg
}

# The runner job, one guest at a time and N at once.
guests() {
    # One boot order for both runs, so that only the parallelism differs.
    sed 's/^runs = 3$/runs = 3\nseed = 2026/' examples/jobs/seed-002-open1.toml >"$out/job.toml"
    sed -i "s|\"\\.\\./patches/|\"$patches/|" "$out/job.toml"
    echo "guests: building both kernels into $cache (not timed)"
    "$runner" job "$out/job.toml" --cache "$cache" --build-only >/dev/null
    local guests started
    for guests in 1 "$n"; do
        started="$(now)"
        "$runner" job "$out/job.toml" --cache "$cache" --parallel "$guests" -o "$out/p$guests" \
            >"$out/p$guests.log" 2>&1
        echo "guests: parallel $guests: $(since "$started") s for 6 boots (load $(load))"
        "$runner" compare "$out/p$guests/base" "$out/p$guests/patched" | head -1 | sed 's/^/  /'
        python3 "$ROOT/bench/job_boots.py" "$out/p$guests"
    done
    echo "guests: target: parallel $n about 1/$n of parallel 1's time; the changes agree within the spread"
}

started_server=0
server_and_agent() {
    ((started_server)) && return
    bench_start_server turnaround
    bench_start_agent turnaround-lab --cache "$cache" --parallel "$n"
    started_server=1
}

# submit NAME ARGS...: submits and waits; prints the time from submit to
# verdict and the verdict's lines.
submit() {
    local name="$1" started rc=0
    shift
    started="$(now)"
    "$runner" submit --server "$url" --token "$ci_token" --base linux-source-6.1 -t 1 \
        --runs 3 --wait --poll 1 "$@" >"$out/$name.log" 2>&1 || rc=$?
    echo "$name: $(since "$started") s from submit to verdict (exit $rc, load $(load))"
    # The last paragraph: headlines, steps, verdict.
    awk 'NF == 0 { last = ""; next } { last = last "  " $0 "\n" } END { printf "%s", last }' \
        "$out/$name.log"
    cp "$out/$name.log" "/tmp/patchperf-turnaround-${name// /-}.log"
    if ((rc != 0)); then
        tail -20 "$out/$name.log" >&2
        tail -20 "$data/runner.log" >&2
        exit "$rc"
    fi
}

# fresh_patch PATCH OUT FILE...: PATCH (touching FILEs of linux-source-6.1)
# with a line of code added at the end of the first FILE, written to OUT,
# so that no kernel cache and no ccache has a kernel or object of it.
fresh_patch() {
    local patch="$1" dest="$2" src="$cache/sources/linux-source-6.1" tree f
    shift 2
    [[ -f "$src/Makefile" ]] || {
        echo "turnaround: $src is not unpacked yet" >&2
        exit 1
    }
    tree="$(mktemp -d "$out/fresh.XXXXXX")"
    for f in "$@"; do
        mkdir -p "$tree/$(dirname "$f")"
        cp "$src/$f" "$tree/$f"
    done
    git -C "$tree" init -q
    git -C "$tree" add -A
    git -C "$tree" -c user.name=bench -c user.email=bench@localhost commit -qm base
    git -C "$tree" apply "$patch"
    printf '\nstatic const char turnaround_stamp[] __used = "%s";\n' "$(now)" >>"$tree/$1"
    git -C "$tree" add -A
    git -C "$tree" -c user.name="Bench Mark" -c user.email=bench@localhost \
        commit -qm "$(sed -n 's/^Subject: \[PATCH\] //p' "$patch" | head -1), as built for the first time"
    git -C "$tree" format-patch -1 --stdout >"$dest"
}

verdict() {
    server_and_agent
    echo "verdict: agent with --parallel $n, kernels in $cache; calibrating the machine first (not timed)"
    submit calibration --aa -w open1
    submit "seed 002, kernels cached" --mbox "$patches/002-fs-use-__fput_sync-in-close-2.patch" -w open1
    fresh_patch "$patches/002-fs-use-__fput_sync-in-close-2.patch" "$out/fresh.patch" \
        fs/open.c fs/file_table.c
    submit "seed 002 as a patch never built" --mbox "$out/fresh.patch" -w open1
    echo "verdict: target: at most 60 s with the kernels cached and the machine calibrated"
}

series() {
    server_and_agent
    # Patch 1 with a line of code added (so every step's kernel is built,
    # as for a series never seen); the files end without the blank line an
    # mbox puts between messages.
    fresh_patch "$patches"/001-*.patch "$out/001.patch" fs/namei.c
    local p
    for p in "$out/001.patch" "$patches"/00[2-4]-*.patch; do
        cat "$p"
        echo
    done >"$out/series.mbox"
    submit "seeds 001-004 per patch" --mbox "$out/series.mbox" --per-patch \
        -w open1,fstatat-empty,dup1
}

# pass TITLE FRESH: seed 002 on open1 and seed 003 on fstatat-empty, one
# after the other, then both submitted together; with FRESH=1 each patch
# gets a line of code added first, so each submission builds its kernel.
pass() {
    local title="$1" fresh="$2" how name args pair started pids=() k=0
    for how in "one after the other" together; do
        local two=(
            "seed 002 on open1|$patches/002-fs-use-__fput_sync-in-close-2.patch|open1|fs/open.c fs/file_table.c"
            "seed 003 on fstatat-empty|$(echo "$patches"/003-*.patch)|fstatat-empty|fs/stat.c"
        )
        started="$(now)"
        pids=()
        for pair in "${two[@]}"; do
            local patch workload files
            IFS='|' read -r name patch workload files <<<"$pair"
            if ((fresh)); then
                k=$((k + 1))
                # shellcheck disable=SC2086
                fresh_patch "$patch" "$out/beside-$k.patch" $files
                patch="$out/beside-$k.patch"
            fi
            args=(--mbox "$patch" -w "$workload")
            if [[ "$how" == together ]]; then
                submit "beside, $title, $how: $name" "${args[@]}" >"$out/together-${#pids[@]}.out" &
                pids+=($!)
            else
                submit "beside, $title, $how: $name" "${args[@]}"
            fi
        done
        for pid in "${pids[@]}"; do
            wait "$pid"
        done
        [[ "$how" == together ]] && cat "$out"/together-*.out
        echo "beside: $title, $how: $(since "$started") s to the last verdict (load $(load))"
    done
}

beside() {
    server_and_agent
    echo "beside: both patches' kernels built first (not timed)"
    pass "first" 0 >/dev/null
    pass "kernels cached" 0
    pass "patches never built" 1
    echo "beside: target: together under one after the other, the same verdicts"
}

for part in guests verdict series beside; do
    wants "$part" && "$part"
done
echo "load average: $(load)"
