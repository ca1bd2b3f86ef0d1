#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes the vnpu QEMU device with QEMU's generic-fuzz (libFuzzer, clang,
# ASan, UBSan) for a bounded time, then turns every crash into a qtest
# reproducer in tests/qemu/fuzz-repro/, which the device tests replay.
#
#   scripts/fuzz-qemu.sh [MINUTES]     (default 10)
#
# The fuzz build is cached like scripts/build-qemu.sh's (its own key); the
# corpus and crash artefacts live in $VNPU_CACHE/fuzz/. The device runs in
# deterministic mode (no threads: the fuzzer drives the main loop itself and
# reproducers must not depend on timing) with test mode on.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

minutes=${1:-10}
case $minutes in
'' | *[!0-9]*)
	echo "usage: $0 [MINUTES]" >&2
	exit 2
	;;
esac
# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh

fuzzer=$(scripts/build-qemu.sh --fuzz)
# QEMU's reproducer scripts come from the fuzz variant's source tree.
qemu_tree=$(find "$cache" -mindepth 1 -maxdepth 1 -type d \
	-name 'qemu-[0-9]*-fuzz' | sort -V | tail -1)
[ -n "$qemu_tree" ] || { echo "fuzz-qemu: no QEMU fuzz tree in $cache" >&2; exit 1; }
work=$cache/fuzz
mkdir -p "$work/corpus" "$work/artifacts"

device="vnpu,addr=04.0,exec-mode=deterministic,test-mode=on,vram-size=16M,queues=4"
export QEMU_FUZZ_ARGS="-machine q35 -nodefaults -device $device"
# Our MemoryRegions: vnpu-regs (BAR0), vnpu-msix (BAR2); VRAM is RAM.
export QEMU_FUZZ_OBJECTS="vnpu*"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

log=$work/fuzz-$(date +%Y%m%d-%H%M%S).log
echo "fuzz-qemu: $minutes min of generic-fuzz on '$device' (log $log)"
rm -f "$work"/artifacts/crash-* "$work"/artifacts/timeout-* \
	"$work"/artifacts/oom-* "$work"/artifacts/leak-*
set +e
(cd "$work" && "$fuzzer" --fuzz-target=generic-fuzz -jobs=1 -workers=1 \
	-max_total_time=$((minutes * 60)) -timeout=30 -rss_limit_mb=4096 \
	-artifact_prefix="$work/artifacts/" corpus) >"$log" 2>&1
status=$?
set -e
# With -jobs, libFuzzer writes the worker's output to fuzz-0.log.
[ -f "$work/fuzz-0.log" ] && cat "$work/fuzz-0.log" >>"$log"
execs=$(grep -o '#[0-9]*' "$log" | tr -d '#' | sort -n | tail -1)
echo "fuzz-qemu: libFuzzer exited with $status after ${execs:-0} executions"
grep -E '^#[0-9]+.*(DONE|pulse)' "$log" | tail -2 || true

# Every artefact becomes a reproducer: the fuzzer replays it with its qtest
# commands logged, QEMU's script orders them into a qtest script.
found=0
for crash in "$work"/artifacts/crash-* "$work"/artifacts/timeout-* \
	"$work"/artifacts/oom-*; do
	[ -f "$crash" ] || continue
	found=$((found + 1))
	name=$(basename "$crash")
	trace=$work/$name.trace
	out=$repo/tests/qemu/fuzz-repro/$name.qtest
	QEMU_FUZZ_TIMEOUT=0 QTEST_LOG=1 FUZZ_SERIALIZE_QTEST=1 \
		"$fuzzer" --fuzz-target=generic-fuzz "$crash" >"$trace" 2>&1 || true
	{
		echo "# SPDX-License-Identifier: MIT"
		echo "# Reproducer of $name found by scripts/fuzz-qemu.sh on $(date -u +%F)."
		echo "# args: -device $device"
		python3 "$qemu_tree/scripts/oss-fuzz/reorder_fuzzer_qtest_trace.py" \
			"$trace"
	} >"$out"
	echo "fuzz-qemu: $name -> tests/qemu/fuzz-repro/$name.qtest"
	grep -m3 -E 'ERROR: (AddressSanitizer|UndefinedBehavior|libFuzzer)|runtime error' \
		"$trace" || true
done
echo "fuzz-qemu: $found crash(es) found"
[ "$found" -eq 0 ]
