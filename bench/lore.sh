#!/usr/bin/env bash
# lore-scale benchmark: a real `patchperf-server serve` (release build) with
# its private Postgres, following a public-inbox v2 archive of 100,000
# messages in 3 epochs served by Debian's public-inbox-httpd on 127.0.0.1,
# from its first message. Driven by testkit/examples/lore.rs, which writes
# the archive (ezpi and git fast-import), adds the list and waits until
# every message is stored. Prints the first read's messages a second, the
# server's and Postgres's peak memory, and the load average.
# Target: ≥ 2,000 messages/s.
#
# usage: bench/lore.sh [MESSAGES] [EPOCHS]   (default 100000 3)
# env:   LORE_TIMELINE=1 prints the messages stored every 2 s.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MESSAGES="${1:-100000}"
EPOCHS="${2:-3}"
if ! [[ "$MESSAGES" =~ ^[0-9]+$ && "$EPOCHS" =~ ^[0-9]+$ ]]; then
    echo "usage: bench/lore.sh [MESSAGES] [EPOCHS]" >&2
    exit 2
fi
[[ -x target/ezpi-venv/bin/ezpi ]] || {
    echo "lore: target/ezpi-venv is missing (./patchperf test installs it)" >&2
    exit 2
}

SQLX_OFFLINE=true cargo build --release -p patchperf-server --bin patchperf-server -p patchperf-testkit --example lore
. "$ROOT/bench/lib.sh"
# The archive is served on loopback: the server may clone from it.
export PATCHPERF_ALLOW_PRIVATE_DESTINATIONS=true
bench_start_server lore

echo "lore: $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/lore" "$url" "$ci_token" \
    --server-pid "$server_pid" --postgres-pid "$(bench_postmaster_pid)" \
    --messages "$MESSAGES" --epochs "$EPOCHS"
echo "lore: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
