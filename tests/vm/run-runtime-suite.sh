#!/bin/sh
# SPDX-License-Identifier: MIT
# The runtime's test suite (tests/runtime) inside the vnpu guest, on the drm
# backend: the host-built test programs run against vnpu.ko and the QEMU
# device, one Check test case at a time counted.
#
#   tests/vm/run-runtime-suite.sh [--build DIR] [--results FILE] [--bench]
#                                 [-- VM.SH OPTIONS...]
#
# --build    the meson build dir holding the test programs, vnpu-smi and
#            tools/vnpu.fw (default: build); built first (ninja)
# --results  also write one JSON line per test case, {"name", "result"}
#            with result OK, FAIL or SKIP (as meson's testlog.json)
# --bench    also run bench-drm in the guest (figures only)
# Options after -- go to scripts/vm.sh (e.g. --timeout, --accel).
#
# The guest runs this same file with --guest. Programs that need the
# simulator are skipped on drm, with the reason printed:
#   init          asserts the sim's properties and that no vnpu node exists
#   async-errors  injects faults and hangs and expects the same process to
#                 recover; the driver keeps a faulted or banned context
#                 (the open file) unusable, as its UAPI says
#   device-lost   corrupts the simulator's firmware image so that a reset
#                 cannot boot it again
#   failure-list  shrinks the sim backend's failure list (a sim test hook)
# Prints "runtime-drm: N passed, N failed, N skipped" and exits 1 when any
# test failed or the VM run did not complete.
set -eu

SKIP_INIT="asserts the sim's properties and that no vnpu accel node exists"
SKIP_ASYNC="injects faults/hangs and expects recovery in the same process; \
the driver keeps a faulted or banned context unusable"
SKIP_LOST="corrupts the simulator's firmware image (a sim test hook)"
SKIP_FAILURES="shrinks the sim backend's failure list (a sim test hook)"

# ---- guest side ----------------------------------------------------------------
guest_main() {
	want_bench=$1
	dir=/vnpu/suite
	passed=0 failed=0 skipped=0
	results=/tmp/runtime-suite.jsonl
	: >"$results"
	echo "guest: $(uname -r), $(ls /dev/accel 2>/dev/null | tr '\n' ' ')"
	"$dir/vnpu-smi" --contexts || echo "guest: vnpu-smi failed ($?)"
	for t in "$dir"/tests/test-runtime-*; do
		name=${t##*/test-runtime-}
		reason=""
		case $name in
		init) reason=$SKIP_INIT ;;
		async-errors) reason=$SKIP_ASYNC ;;
		device-lost) reason=$SKIP_LOST ;;
		failure-list) reason=$SKIP_FAILURES ;;
		esac
		if [ -n "$reason" ]; then
			echo "SKIP runtime-$name on drm: $reason"
			echo "{\"name\": \"vm-runtime-drm/$name\", \"result\": \"SKIP\"}" >>"$results"
			skipped=$((skipped + 1))
			continue
		fi
		start=$(date +%s)
		out=$(cd /tmp && VNPU_BACKEND=drm CK_DEFAULT_TIMEOUT=120 "$t" \
			2>&1) && rc=0 || rc=$?
		secs=$(($(date +%s) - start))
		# Check's summary: "NN%: Checks: N, Failures: F, Errors: E".
		sum=$(printf '%s\n' "$out" | sed -n \
			's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' |
			tail -1)
		if [ -n "$sum" ]; then
			set -- $sum
			nf=$(($2 + $3))
			np=$(($1 - nf))
		else
			np=0 nf=0
		fi
		if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
			nf=1 # crashed before Check reported
		fi
		passed=$((passed + np))
		failed=$((failed + nf))
		if [ "$nf" -eq 0 ]; then
			echo "PASS runtime-$name: $np test(s), ${secs}s"
		else
			echo "FAIL runtime-$name: $np passed, $nf failed, ${secs}s"
			printf '%s\n' "$out" | sed 's/^/    /'
		fi
		i=0
		while [ "$i" -lt "$np" ]; do
			i=$((i + 1))
			echo "{\"name\": \"vm-runtime-drm/$name/$i\", \"result\": \"OK\"}"
		done >>"$results"
		i=0
		while [ "$i" -lt "$nf" ]; do
			i=$((i + 1))
			echo "{\"name\": \"vm-runtime-drm/$name/failed-$i\", \"result\": \"FAIL\"}"
		done >>"$results"
	done
	"$dir/vnpu-smi" --contexts || true
	if [ "$want_bench" = bench ] && [ -x "$dir/bench-drm" ]; then
		echo "== bench-drm"
		"$dir/bench-drm" || echo "bench-drm failed ($?)"
	fi
	echo "== results"
	cat "$results"
	echo "runtime-drm: $passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
}

if [ "${1:-}" = --guest ]; then
	guest_main "${2:-}"
	exit $?
fi

# ---- host side -------------------------------------------------------------------
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=build
results=""
bench=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--results) results=${2:?}; shift 2 ;;
	--bench) bench=bench; shift ;;
	--) shift; break ;;
	*) sed -n '6,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$repo/$build ;; esac
[ -f "$build/build.ninja" ] || { echo "no meson build dir $build" >&2; exit 2; }

echo "runtime-suite: building the test programs in $build" >&2
if ! ninja -C "$build" -j2 >&2; then
	[ -x "$build/tools/vnpu-smi" ] && [ -f "$build/tools/vnpu.fw" ] || exit 1
	echo "runtime-suite: the build failed; running the programs already" \
		"built in $build" >&2
fi
ko=$("$repo/scripts/build-module.sh")

stage=$(mktemp -d "${TMPDIR:-/tmp}/vnpu-suite.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/suite/tests"
find "$build/tests/runtime" -maxdepth 1 -type f -name 'test-runtime-*' \
	-perm -u+x -exec cp {} "$stage/suite/tests/" \;
cp "$build/tools/vnpu-smi" "$stage/suite/"
[ -z "$bench" ] || cp "$build/workloads/bench/bench-drm" "$stage/suite/"
cp "$0" "$stage/suite/run-runtime-suite.sh"

out=$stage/out
# sh has no pipefail: vm.sh's own status travels through a file, not tee's.
{
	"$repo/scripts/vm.sh" run --module "$ko" --memory-checks \
		--firmware "$build/tools/vnpu.fw" \
		--add "$stage/suite:/vnpu/suite" "$@" -- \
		sh /vnpu/suite/run-runtime-suite.sh --guest "$bench" &&
		echo 0 >"$stage/rc" || echo $? >"$stage/rc"
} | tee "$out"
rc=$(cat "$stage/rc")
if [ -n "$results" ]; then
	# The last attempt's lines (vm.sh may boot again under TCG).
	awk '/^== results$/ {n = 0; delete r; next}
		/^\{"name": "vm-runtime-drm\// {r[n++] = $0}
		END {for (i = 0; i < n; i++) print r[i]}' "$out" >"$results"
	if [ "$rc" -ne 0 ] && ! grep -q '^runtime-drm: ' "$out"; then
		# The VM run itself failed (boot, timeout, kernel WARN).
		echo '{"name": "vm-runtime-drm/vm-run", "result": "FAIL"}' \
			>>"$results"
	fi
fi
exit "$rc"
