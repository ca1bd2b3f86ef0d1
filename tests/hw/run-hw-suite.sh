#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The driver's hardware test suite (tests/hw/hw_*.c) inside the vnpu guest:
# builds the programs, boots the VM once with the device in test mode and
# runs every hw_* program against vnpu.ko, counting Check's test results.
#
#   tests/hw/run-hw-suite.sh [--build DIR] [--results FILE] [--only NAME]...
#                            [-- VM.SH OPTIONS...]
#
# --build    the meson build dir holding tests/hw/hw_* and tools/vnpu.fw
#            (default: build); built first (ninja)
# --results  also write one JSON line per test, {"name", "result"} with
#            result OK or FAIL (as meson's testlog.json)
# --only     run only this program (e.g. hw_submit; repeatable)
# --repeat   run the programs N times in the one boot (to catch races)
# Options after -- go to scripts/vm.sh (e.g. --timeout, --accel, --qemu).
# CK_RUN_SUITE / CK_RUN_CASE in the environment select Check test cases.
#
# The guest runs this same file with sh --guest (POSIX sh, busybox): each
# program runs with CK_VERBOSITY=verbose (one Passed/Failure/Error line per
# test). A program that does not answer yes to `PROG --expects-reset` fails
# when the debugfs reset counter moved while it ran; so does a program that
# exits having run no test. Lines "figure: ..." a passing program prints (its
# measurements) are shown under its result. Prints "hw: N passed, N failed"
# and exits non-zero when a test failed, a program crashed, a reset was
# unexpected or the VM run failed (vm.sh also fails it on a kernel
# WARN/BUG/oops in dmesg). The guest boots with vm.sh --memory-checks.

# ---- guest side (POSIX sh) -----------------------------------------------------
guest_result() {
	echo "{\"name\": \"vm-hw/$1\", \"result\": \"$2\"}" >>"$results"
}

guest_resets() {
	cat /sys/kernel/debug/accel/*/reset_counter 2>/dev/null | head -1
}

guest_main() {
	dir=/vnpu/hw
	passed=0 failed=0
	results=/tmp/hw-suite.jsonl
	: >"$results"
	echo "guest: $(uname -r), $(ls /dev/accel 2>/dev/null | tr '\n' ' ')"
	round=0
	while [ "$round" -lt "${HW_REPEAT:-1}" ]; do
		round=$((round + 1))
		[ "${HW_REPEAT:-1}" -eq 1 ] || echo "== round $round"
		for t in "$dir"/tests/hw_*; do
			name=${t##*/}
			if [ -n "$HW_ONLY" ]; then
				case " $HW_ONLY " in
				*" $name "*) ;;
				*) continue ;;
				esac
			fi
			before=$(guest_resets)
			start=$(date +%s)
			out=$(cd /tmp && CK_VERBOSITY=verbose CK_DEFAULT_TIMEOUT=120 \
				"$t" 2>&1) && rc=0 || rc=$?
			secs=$(($(date +%s) - start))
			after=$(guest_resets)
			# Check's verbose lines: FILE:LINE:P|F|E:TCASE:TEST:ITER: MSG.
			tests=$(printf '%s\n' "$out" | sed -n \
				's/^[^:]*:[0-9]*:\([PFE]\):\([^:]*\):\([^:]*\):[0-9]*: .*/\1 \2\/\3/p')
			np=0 nf=0
			while read -r res tname; do
				[ -n "$res" ] || continue
				if [ "$res" = P ]; then
					np=$((np + 1))
					guest_result "$name/$tname" OK
				else
					nf=$((nf + 1))
					guest_result "$name/$tname" FAIL
				fi
			done <<EOF
$tests
EOF
			if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
				nf=$((nf + 1)) # crashed before Check reported
				guest_result "$name/exit-status" FAIL
			elif [ "$np" -eq 0 ] && [ "$nf" -eq 0 ]; then
				nf=1 # a program that tested nothing proves nothing
				guest_result "$name/no-tests" FAIL
			fi
			reset_note=""
			if [ "$before" != "$after" ] && ! "$t" --expects-reset; then
				nf=$((nf + 1))
				reset_note=", unexpected reset ($before -> $after)"
				guest_result "$name/unexpected-reset" FAIL
			fi
			passed=$((passed + np))
			failed=$((failed + nf))
			if [ "$nf" -eq 0 ]; then
				echo "PASS $name: $np test(s), ${secs}s"
				printf '%s\n' "$out" | sed -n 's/^figure: /    /p'
			else
				echo "FAIL $name: $np passed, $nf failed, ${secs}s$reset_note"
				printf '%s\n' "$out" | grep -v ':P:' | sed 's/^/    /'
			fi
		done
	done
	echo "== results"
	cat "$results"
	echo "hw: $passed passed, $failed failed"
	if [ $((passed + failed)) -eq 0 ]; then
		echo "hw: no test ran (no such program?)"
		return 1
	fi
	[ "$failed" -eq 0 ]
}

if [ "${1:-}" = --guest ]; then
	shift
	HW_ONLY=""
	while [ $# -gt 0 ]; do
		case $1 in
		CK_RUN_SUITE=* | CK_RUN_CASE=*) export "${1?}" ;;
		HW_REPEAT=*) HW_REPEAT=${1#HW_REPEAT=} ;;
		*) HW_ONLY="$HW_ONLY $1" ;;
		esac
		shift
	done
	guest_main
	exit $?
fi

# ---- host side (bash) ----------------------------------------------------------
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=build
results=""
only=()
repeat=1
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--results) results=${2:?}; shift 2 ;;
	--only) only+=("${2:?}"); shift 2 ;;
	--repeat) repeat=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) sed -n '7,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$repo/$build ;; esac
[ -f "$build/build.ninja" ] || { echo "no meson build dir $build" >&2; exit 2; }

echo "hw-suite: building the programs in $build" >&2
ninja -C "$build" -j2 tools/vnpu.fw >&2
mapfile -t targets < <(ninja -C "$build" -t targets all |
	sed -n 's/^\(tests\/hw\/hw_[a-z0-9_]*\): c_LINKER$/\1/p')
[ ${#targets[@]} -gt 0 ] || { echo "hw-suite: no hw_* targets" >&2; exit 2; }
ninja -C "$build" -j2 "${targets[@]}" >&2
ko=$("$repo/scripts/build-module.sh")

stage=$(mktemp -d "${TMPDIR:-/tmp}/vnpu-hw.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/hw/tests"
for t in "${targets[@]}"; do
	cp "$build/$t" "$stage/hw/tests/"
done
cp "$0" "$stage/hw/run-hw-suite.sh"

case $repeat in '' | *[!0-9]* | 0) echo "--repeat wants N >= 1" >&2; exit 2 ;; esac
guest_args=("${only[@]}" "HW_REPEAT=$repeat")
[ -z "${CK_RUN_SUITE:-}" ] || guest_args+=("CK_RUN_SUITE=$CK_RUN_SUITE")
[ -z "${CK_RUN_CASE:-}" ] || guest_args+=("CK_RUN_CASE=$CK_RUN_CASE")

out=$stage/out
set +e
"$repo/scripts/vm.sh" run --module "$ko" --memory-checks \
	--firmware "$build/tools/vnpu.fw" --device-opts test-mode=on \
	--add "$stage/hw:/vnpu/hw" "$@" -- \
	sh /vnpu/hw/run-hw-suite.sh --guest "${guest_args[@]}" | tee "$out"
rc=${PIPESTATUS[0]}
set -e
if [ -n "$results" ]; then
	# The last attempt's lines (vm.sh may boot again under TCG).
	awk '/^== results$/ {n = 0; delete r; next}
		/^\{"name": "vm-hw\// {r[n++] = $0}
		END {for (i = 0; i < n; i++) print r[i]}' "$out" >"$results"
	if [ "$rc" -ne 0 ] && ! grep -q '^hw: ' "$out"; then
		# The VM run itself failed (boot, timeout, kernel WARN).
		echo '{"name": "vm-hw/vm-run", "result": "FAIL"}' >>"$results"
	fi
fi
if [ "$rc" -ne 0 ] && grep -q '^hw: .* 0 failed$' "$out"; then
	echo "hw-suite: the tests passed but the VM run failed ($rc):" \
		"a kernel WARN/BUG/oops or a timeout (see above)" >&2
fi
exit "$rc"
