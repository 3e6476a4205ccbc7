#!/usr/bin/env bash
# The bare-metal kexec path end to end (issue 17), in a QEMU guest that
# plays the lab machine, with real kernels and a real server; too slow for
# CI.
#
#   1. Both kernels of the comparison are built here on the host into the
#      cache (`runner job --build-only`): building inside a TCG guest would
#      take hours. Its config fragment, bench/kexec-lab.config, adds kexec,
#      virtio-net and IP autoconfiguration, so the comparison's base kernel
#      is the lab kernel itself (same cache key).
#   2. A release `patchperf-server serve` with its private Postgres
#      (bench/lib.sh).
#   3. QEMU (plain TCG: under icount with sleep=off an idle guest's clock
#      jumps ahead, so network timeouts would fire early) boots the lab
#      kernel with the host's root over 9p, writable: the agent writes its
#      cache and spool, and the kernels it kexecs mount the root `rw` from
#      the lab kernel's command line just as on bare metal, so the kexec
#      code runs unchanged (a second writable share would need a VM-only
#      mount in the kexec'd guest). Its init is `runner lab-init`, which
#      mounts proc, sys, devtmpfs and a tmpfs and starts `runner agent
#      --kexec`; the agent reaches the server at 10.0.2.2 (QEMU user
#      networking's address for the host's 127.0.0.1).
#   4. A comparison pinned to the lab machine: seed 002 on open1, 1 task,
#      3 boots a side, 1 s runs, backend kexec. The agent kexecs each
#      kernel in the server's boot order; each runs `guest --kexec-out` and
#      reboots; QEMU's reset boots the lab kernel again (no -no-reboot),
#      whose agent resumes from the state in the cache, uploads the slot's
#      results and kexecs the next.
#   5. Prints the report, the wall time and the load average, and checks
#      the stored runs: 3 a side, measured `kexec`, each side on one kernel
#      (uname -v), the two sides on different kernels, the base the lab
#      kernel.
#
# usage: bench/kexec-vm.sh
#   PATCHPERF_KEXEC_CACHE: the kernel cache (default /var/cache/patchperf-kexec;
#   its ccache is warmed from /var/cache/patchperf-test/ccache when empty)
#   KEXEC_VM_SMP: the lab machine's CPUs (default 2)
# The console of the lab machine is kept in /tmp/patchperf-kexec-vm-console.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
target="${CARGO_TARGET_DIR:-$ROOT/target}"
runner="$target/release/patchperf-runner"
cache="${PATCHPERF_KEXEC_CACHE:-/var/cache/patchperf-kexec}"
smp="${KEXEC_VM_SMP:-2}"
patch="$ROOT/examples/patches/002-fs-use-__fput_sync-in-close-2.patch"
fragment="$ROOT/bench/kexec-lab.config"
machine="kexec-lab"
console_keep=/tmp/patchperf-kexec-vm-console.log

fail() {
    echo "kexec-vm: FAIL: $*" >&2
    exit 1
}

# The kernel tests' cache may be in use by a test run: never share it.
[[ "$(realpath -m "$cache")" != /var/cache/patchperf-test ]] ||
    fail "use a cache of its own, not the kernel tests' /var/cache/patchperf-test"
# Paths go on the kernel command line and into QEMU's comma lists.
for p in "$ROOT" "$target" "$cache"; do
    [[ "$p" != *[[:space:],]* ]] || fail "$p: a path with spaces or commas"
done

started=$SECONDS
echo "kexec-vm: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo build --release -p patchperf-server -p patchperf-runner

# Not under /tmp: the lab machine's init mounts a tmpfs there, and the
# agent reads its environment file and keeps its spool here.
lab="$(mktemp -d /var/tmp/patchperf-kexec-lab.XXXXXX)"
qemu_pid=""
cleanup() {
    if [[ -n "$qemu_pid" ]]; then
        kill -TERM "$qemu_pid" 2>/dev/null || true
        wait "$qemu_pid" 2>/dev/null || true
    fi
    cp "$lab/console.log" "$console_keep" 2>/dev/null || true
    rm -rf "$lab"
    [[ -z "${data:-}" ]] || bench_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1. Both kernels, on the host.
mkdir -p "$cache"
if [[ ! -d "$cache/ccache" && -d /var/cache/patchperf-test/ccache ]]; then
    echo "kexec-vm: warming ccache from /var/cache/patchperf-test/ccache"
    cp -a /var/cache/patchperf-test/ccache "$cache/ccache"
fi
cat >"$lab/job.toml" <<EOF
base = "linux-source-6.1"
patches = "$patch"
config = "$fragment"
workloads = ["open1"]
runs = 3

[params]
mode = "process"
nr_task = [1]
seconds = 1
warmup_seconds = 0
EOF
build_started=$SECONDS
PATCHPERF_CACHE="$cache" "$runner" job "$lab/job.toml" --build-only >"$lab/kernels.txt"
base_dir="$(sed -n 's/^base //p' "$lab/kernels.txt")"
patched_dir="$(sed -n 's/^patched //p' "$lab/kernels.txt")"
[[ -f "$base_dir/bzImage" && -f "$patched_dir/bzImage" ]] || fail "no kernels: $(cat "$lab/kernels.txt")"
[[ "$base_dir" != "$patched_dir" ]] || fail "base and patched are the same kernel"
grep -qx 'CONFIG_KEXEC=y' "$base_dir/config" || fail "the lab kernel $base_dir has no CONFIG_KEXEC"
echo "kexec-vm: kernels ready in $((SECONDS - build_started)) s: base (the lab kernel) $base_dir, patched $patched_dir"

# 2. The server.
. "$ROOT/bench/lib.sh"
bench_start_server kexec-vm
# bench_start_server traps EXIT with its own cleanup; ours calls it.
trap cleanup EXIT
port="${url##*:}"

# 3. The lab machine.
mkdir -p "$lab/spool"
(
    umask 077
    cat >"$lab/lab.env" <<EOF
PATCHPERF_SERVER=http://10.0.2.2:$port
PATCHPERF_TOKEN=$runner_token
PATCHPERF_SPOOL=$lab/spool
PATCHPERF_CACHE=$cache
EOF
)
append="console=ttyS0 root=root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144 rw"
append+=" ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off i8042.noaux panic=10"
# After the kernel's `--` everything is init's, up to a second `--`, which
# the kernel drops along with what follows: lab-init takes the agent's
# arguments without one.
append+=" init=$runner -- lab-init --env-file $lab/lab.env agent --kexec --machine $machine --claim-wait 10"
bios=()
[[ ! -f /usr/share/qemu/qboot.rom ]] || bios=(-bios /usr/share/qemu/qboot.rom)
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$smp" -m 1024 -machine q35 \
    -nodefaults -display none -monitor none -serial "file:$lab/console.log" "${bios[@]}" \
    -kernel "$base_dir/bzImage" -append "$append" \
    -virtfs local,path=/,mount_tag=root,security_model=none,multidevs=remap \
    -netdev user,id=net0 -device virtio-net-pci,netdev=net0 \
    </dev/null >"$lab/qemu.log" 2>&1 &
qemu_pid=$!
lab_started=$SECONDS
echo "kexec-vm: lab machine booting (QEMU $qemu_pid, console $lab/console.log)"

qemu_alive() {
    kill -0 "$qemu_pid" 2>/dev/null || {
        tail -40 "$lab/console.log" >&2 || true
        cat "$lab/qemu.log" >&2
        fail "QEMU exited (console above)"
    }
}
for _ in $(seq 1 600); do
    curl -fsS "$url/api/v1/machines" | grep -q "\"$machine\"" && break
    qemu_alive
    sleep 1
done
curl -fsS "$url/api/v1/machines" | grep -q "\"$machine\"" ||
    fail "the lab machine did not register in 600 s (console: $console_keep)"
echo "kexec-vm: lab machine registered $((SECONDS - lab_started)) s after QEMU started"

# 4. The comparison: 3 boots a side and no more (a wall-clock backend may
# otherwise grow while undecided; this is a functional check of the path).
compare_started=$SECONDS
"$runner" submit --server "$url" --token "$ci_token" --machine "$machine" --measurement kexec \
    --mbox "$patch" --config "$fragment" -w open1 --tasks 1 --runs 3 --max-runs 3 \
    --seconds 1 --warmup 0 \
    --wait --poll 5 >"$lab/submit.out" 2>&1 &
submit_pid=$!
while kill -0 "$submit_pid" 2>/dev/null; do
    qemu_alive
    if ((SECONDS - compare_started > 3600)); then
        kill -TERM "$submit_pid" 2>/dev/null || true
        fail "the comparison did not end in an hour"
    fi
    sleep 5
done
submit_status=0
wait "$submit_pid" || submit_status=$?
compare_seconds=$((SECONDS - compare_started))
cat "$lab/submit.out"
((submit_status == 0 || submit_status == 3)) || fail "submit --wait exited with $submit_status"
id="$(sed -n 's/^comparison \([0-9]*\) submitted$/\1/p' "$lab/submit.out" | head -1)"
[[ -n "$id" ]] || fail "no comparison id in submit's output"

# 5. What was stored.
pg_bin="/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin"
runs="$(runuser -u postgres -- "$pg_bin/psql" -h "$data/pg/run" -d patchperf -AtF '|' -c \
    "SELECT boot_seq, side, measurement, kernel->>'version', coalesce(kernel->>'patches_sha256', '')
       FROM runs WHERE comparison_id = $id ORDER BY boot_seq")"
echo
echo "stored runs (boot|side|measurement|uname -v|patches sha256):"
echo "$runs"
lab_starts="$(grep -c 'patchperf-lab: up' "$lab/console.log" || true)"
kexecs="$(grep -c 'patchperf-guest: done' "$lab/console.log" || true)"
echo
echo "kexec-vm: comparison $id: $compare_seconds s from submit to verdict; whole script $((SECONDS - started)) s"
echo "kexec-vm: on the console: $lab_starts lab kernel starts, $kexecs kexec'd guests done; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

side_versions() { awk -F'|' -v s="$1" '$2 == s {print $4}' <<<"$runs" | sort -u; }
[[ "$(awk -F'|' '$2 == "base"' <<<"$runs" | wc -l)" == 3 ]] || fail "not 3 base runs"
[[ "$(awk -F'|' '$2 == "patched"' <<<"$runs" | wc -l)" == 3 ]] || fail "not 3 patched runs"
[[ "$(awk -F'|' '$3 != "kexec"' <<<"$runs" | wc -l)" == 0 ]] || fail "a run not measured under kexec"
base_v="$(side_versions base)"
patched_v="$(side_versions patched)"
[[ -n "$base_v" && "$(wc -l <<<"$base_v")" == 1 ]] || fail "base runs on more than one kernel: $base_v"
[[ -n "$patched_v" && "$(wc -l <<<"$patched_v")" == 1 ]] || fail "patched runs on more than one kernel: $patched_v"
[[ "$base_v" != "$patched_v" ]] || fail "both sides ran on the same kernel ($base_v)"
# uname -v starts with the kernel's cache key (KBUILD_BUILD_VERSION): the
# base side ran the lab kernel's own bzImage, the patched side the other.
base_key="$(basename "$base_dir")"
patched_key="$(basename "$patched_dir")"
[[ "$base_v" == "#${base_key:0:12} "* ]] || fail "base runs on $base_v, not the lab kernel ${base_key:0:12}"
[[ "$patched_v" == "#${patched_key:0:12} "* ]] || fail "patched runs on $patched_v, not ${patched_key:0:12}"
[[ -z "$(awk -F'|' '$2 == "base" {print $5}' <<<"$runs" | sort -u)" ]] || fail "a base run on a patched kernel"
[[ -n "$(awk -F'|' '$2 == "patched" {print $5}' <<<"$runs" | sort -u)" ]] || fail "a patched run without the series"
((kexecs == 6)) || fail "$kexecs kexec'd guests finished their runs, expected 6"
# One lab start for the job's claim, then one after each of the 6 kexecs.
((lab_starts >= 7)) || fail "the lab kernel started $lab_starts times, expected at least 7"
echo "kexec-vm: PASS: 6 kexec boots, base on \"$base_v\" (the lab kernel's own bzImage), patched on \"$patched_v\""
