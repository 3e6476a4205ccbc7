#!/usr/bin/env bash
# Long fuzz run: every fuzz target (the proptest properties named `fuzz_*`
# beside each parser and entry point: common's mbox parser, list mail
# reader and series assembly, runner-protocol
# and CI API bodies, RunResult, what goes into a mail from outside; the
# server's mail as composed from a repository's author, subject and Cc; the
# runner's perf stat and perf script parsers and their metrics, job files,
# the guest protocol) with many more
# cases than `cargo test`'s 256 a property. Prints, per target, the
# properties run and the inputs tried (a property that passes has tried
# exactly PROPTEST_CASES inputs: none of them rejects inputs), and the
# total. Any failure stops the run with proptest's minimal failing input.
#
# usage: bench/fuzz.sh [CASES]     (default 20000 inputs a property)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CASES="${1:-20000}"
export PROPTEST_CASES="$CASES"
export SQLX_OFFLINE=true

# Build first, so the times below are fuzzing only.
cargo test -p patchperf-common -p patchperf-runner --lib --test fuzz --no-run --quiet
cargo test -p patchperf-server --lib --no-run --quiet

total=0
# report LABEL FILTER CARGO-ARGS...: runs the properties whose path starts with FILTER.
report() {
    local label="$1" filter="$2"; shift 2
    local start end out properties
    start=$(date +%s)
    if ! out=$(cargo test --quiet "$@" -- "$filter" --format=pretty 2>&1); then
        printf '%s\n' "$out" | tail -n 60
        echo "FAILED: $label" >&2
        exit 1
    fi
    end=$(date +%s)
    # Only the properties: named regression tests beside them try one input.
    properties=$(printf '%s\n' "$out" | grep -c '^test [^ ]*::fuzz_[^ ]* \.\.\. ok$' || true)
    total=$((total + properties * CASES))
    printf '%-52s %2d properties %10d inputs %5d s\n' \
        "$label" "$properties" "$((properties * CASES))" "$((end - start))"
}

report "mbox/series parser (common/src/mbox/tests.rs)" mbox::tests:: -p patchperf-common --lib
report "list mail: reader, mbox split, series (common/src/mail)" mail::fuzz:: -p patchperf-common --lib
report "runner protocol + RunResult (common/tests/fuzz)" protocol:: -p patchperf-common --test fuzz
report "CI API + submission checks (common/tests/fuzz)" api:: -p patchperf-common --test fuzz
report "mail header and text sanitiser (common/tests/fuzz)" mail:: -p patchperf-common --test fuzz
report "mail from a repository, composed (server deliver.rs)" domain::deliver:: -p patchperf-server --lib
report "perf stat CSV + metrics (runner/tests/fuzz)" perf_stat:: -p patchperf-runner --test fuzz
report "perf script + profile (runner/tests/fuzz)" perf_script:: -p patchperf-runner --test fuzz
report "job files (runner/tests/fuzz)" jobfile:: -p patchperf-runner --test fuzz
report "guest protocol (runner/tests/fuzz)" guest_protocol:: -p patchperf-runner --test fuzz
echo "total: $total inputs, 0 panics, 0 failed properties (PROPTEST_CASES=$CASES)"
