#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: build everything, boot the VM with the NPU (our QEMU with
# -device vnpu, Debian's 6.12 kernel, vnpu.ko) and run the workloads in
# it through the driver; each is checked against a CPU reference. Then the
# PyTorch workloads (torch_vnpu) in a second boot of the VM, from the host's
# Debian userland shared read-only (scripts/vm.sh --host-root), through the
# driver too.
#
#   scripts/run.sh          the VM (falls back to the simulator, saying why,
#                           when the VM cannot be built or booted here)
#   scripts/run.sh --vm     the VM only: a VM failure is a failure
#   scripts/run.sh --sim    the embedded simulator in-process, no VM
#
# The first run on a fresh machine builds QEMU, the module and the guest
# (several minutes); later runs reuse the caches (see docs/vm.md).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=auto
case ${1:-} in
--vm) mode=vm ;;
--sim) mode=sim ;;
"") ;;
*)
	echo "usage: $0 [--vm|--sim]" >&2
	exit 2
	;;
esac

# Each step says how long it took, so a slow first run shows where.
step_name=""
step_t0=""
step_done() {
	[ -n "$step_name" ] || return 0
	awk -v a="$step_t0" -v b="$EPOCHREALTIME" -v n="$step_name" \
		'BEGIN {printf "run: %s: %.1f s\n", n, b - a}' >&2
	step_name=""
}
step() {
	step_done
	step_name=$*
	step_t0=$EPOCHREALTIME
	printf '\n== %s\n' "$*" >&2
}
trap step_done EXIT

step "dependencies"
scripts/deps.sh
torch_python=$(scripts/torch-env.sh)
step "building user space (release)"
scripts/build.sh build-release --buildtype=release -Dtests=disabled \
	-Dpython="$torch_python" >/dev/null
bin=build-release

# The workloads: the kernel-level ones, then the dispatcher's.
workloads=("$bin/workloads/vnpu-workloads"
	"$bin/workloads/vnpu-dispatch-workloads")

run_sim() {
	step "running the workloads on the simulator in-process"
	local rc=0 w
	for w in "${workloads[@]}"; do
		VNPU_BACKEND=sim "$w" || rc=1
	done
	return $rc
}

# PyTorch programs on npu through torch_vnpu, against PyTorch's
# CPU; built for the PyTorch scripts/torch-env.sh made ready.
torch_workloads=$bin/workloads/vnpu-torch-workloads
torch_built() {
	[ -x "$torch_workloads" ] && return 0
	echo "run: torch_vnpu was not built (no usable PyTorch here)" >&2
	return 1
}
run_torch_sim() {
	step "running the PyTorch workloads (torch_vnpu) on the simulator in-process"
	torch_built || return 1
	VNPU_BACKEND=sim PYTHONDONTWRITEBYTECODE=1 "$torch_workloads"
}

# The same programs in the guest: the host's /usr and this checkout are
# shared read-only (scripts/vm.sh --host-root), so Debian's Python, the
# PyTorch of torch-env.sh (Debian 12: the checkout's .venv; Debian 13:
# Debian's) and this build tree are there at the same paths; vnpu.ko and the
# firmware are the build's, as for the C workloads. Its own boot, so that
# the time to the first result is boot, module load, 'import torch' and the
# first workload, as a user of the VM sees it.
run_vm_torch() {
	step "booting the VM and running the PyTorch workloads through vnpu.ko"
	torch_built || return 1
	local t0=$EPOCHREALTIME rc
	set +e
	scripts/vm.sh run --qemu "$qemu" --module "$ko" \
		--firmware "$bin/tools/vnpu.fw" --host-root --user \
		--timeout "${VNPU_TORCH_VM_TIMEOUT:-1200}" -- \
		sh -c 'echo "guest: uptime $(cut -d" " -f1 /proc/uptime) s," \
			"starting $1" >&2
			VNPU_BACKEND=drm PYTHONDONTWRITEBYTECODE=1 exec "$1"' \
		sh "$torch_workloads" | first_result_time "$t0" PyTorch
	rc=${PIPESTATUS[0]}
	set -e
	return "$rc"
}

qemu=""
ko=""
run_vm() {
	local guest_cmd="" w adds=()
	step "building QEMU with the vnpu device (cached after the first run)"
	qemu=$(scripts/build-qemu.sh) || return 3
	step "building vnpu.ko against Debian's 6.12 kernel"
	ko=$(scripts/build-module.sh) || return 3
	for w in "${workloads[@]}"; do
		adds+=(--add "$w:/opt/vnpu/bin/$(basename "$w")")
		guest_cmd+="echo; echo '-- $(basename "$w")'; "
		guest_cmd+="/opt/vnpu/bin/$(basename "$w") || rc=1; "
	done
	step "booting the VM and running the workloads through vnpu.ko"
	local t0=$EPOCHREALTIME rc
	set +e
	scripts/vm.sh run --qemu "$qemu" --module "$ko" \
		--firmware "$bin/tools/vnpu.fw" "${adds[@]}" --user -- \
		sh -c "export VNPU_BACKEND=drm; rc=0; $guest_cmd exit \$rc" |
		first_result_time "$t0" workload
	rc=${PIPESTATUS[0]}
	set -e
	return "$rc"
}

# Passes the guest's output through and says when the first workload row
# (a PASS or FAIL verdict) arrived: wall time from starting vm.sh, so it
# covers the initramfs, QEMU's start, the boot and the module load (and for
# PyTorch, starting Python and importing torch and torch_vnpu).
first_result_time() { # START WHAT
	local line seen=0
	while IFS= read -r line; do
		printf '%s\n' "$line"
		if [ $seen -eq 0 ] && [[ $line =~ ^[a-z0-9_-]+\ +(PASS|FAIL)\  ]]; then
			seen=1
			awk -v a="$1" -v b="$EPOCHREALTIME" -v w="$2" 'BEGIN {printf "run: first %s result %.1f s after starting the VM\n", w, b - a}' >&2
		fi
	done
}

# PyTorch runs where the C workloads ran: in the VM, or in-process when the
# VM could not be built here.
status=0
case $mode in
sim)
	run_sim || status=$?
	run_torch_sim || status=1
	;;
vm)
	run_vm || status=$?
	if [ -n "$ko" ]; then
		run_vm_torch || status=1
	fi
	;;
auto)
	run_vm || status=$?
	# 3: QEMU or the module could not be built here. Anything else (the
	# workloads' verdict, a guest kernel problem) stands.
	if [ $status -eq 3 ]; then
		echo "run: the VM is not available here (status $status);" \
			"using the embedded simulator" >&2
		status=0
		run_sim || status=$?
		run_torch_sim || status=1
	else
		run_vm_torch || status=1
	fi
	;;
esac
exit $status
