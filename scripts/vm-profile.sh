#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a null job's time goes, in the guest and on the host (docs/vm.md,
# "The driver path against QEMU's best device"). Two boots:
#  1. ftrace in the guest (scripts/guest/trace-null-jobs): SUBMIT's callees
#     and a timeline of null jobs across the guest's CPUs;
#  2. perf uprobes on QEMU while bench-drm runs untraced with virtio-blk
#     beside it: the doorbell-to-interrupt chain of both devices, per host
#     thread. Needs root and perf; skipped otherwise.
# Prints medians (scripts/lib/vm_profile.py). Figures only: nothing fails
# on a slow run.
#
#   scripts/vm-profile.sh [--build DIR] [--iters N] [--keep DIR]
#                         [-- VM.SH OPTIONS...]
#
# --build  the meson build dir holding bench-drm and vnpu.fw (default build)
# --iters  null jobs traced in the guest, and round trips of each kind
#          under the host probes (default 200 and 3000)
# --keep   a directory to keep the raw traces in
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

build=build
iters=200
keep=
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--iters) iters=${2:?}; shift 2 ;;
	--keep) keep=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) sed -n '13,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$repo/$build ;; esac
[ -f "$build/build.ninja" ] || { echo "no meson build dir $build" >&2; exit 2; }

ninja -C "$build" workloads/bench/bench-drm tools/vnpu.fw >&2
ko=$("$repo/scripts/build-module.sh")
qemu=${VNPU_QEMU:-$("$repo/scripts/build-qemu.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vm=("$repo/scripts/vm.sh" run --quiet --qemu "$qemu" --module "$ko"
	--firmware "$build/tools/vnpu.fw"
	--add "$build/workloads/bench/bench-drm:/opt/vnpu/bin/bench-drm")

"${vm[@]}" --add "$repo/scripts/guest/trace-null-jobs:/opt/vnpu/bin/trace-null-jobs" \
	"$@" -- /opt/vnpu/bin/trace-null-jobs /opt/vnpu/bin/bench-drm "$iters" \
	>"$work/guest.trace"

host_args=()
if [ "$(id -u)" = 0 ] && command -v perf >/dev/null; then
	adds=(-a 'probe_vnpu_profile:vnpu_regs_write=vnpu_regs_write addr=%si:x64')
	for f in sim_raise_irq_locked vnpu_hal_irq vnpu_irq_bh msix_notify \
		apic_send_msi virtio_blk_handle_output \
		virtio_blk_req_complete virtio_notify_irqfd; do
		adds+=(-a "probe_vnpu_profile:$f=$f")
	done
	perf probe -q -d 'probe_vnpu_profile:*' 2>/dev/null || true
	perf probe -q -x "$qemu" "${adds[@]}"
	perf record -q -o "$work/host.data" -e 'probe_vnpu_profile:*' -a -- \
		"${vm[@]}" --bench-disk "$@" -- /opt/vnpu/bin/bench-drm \
		--iters $((iters * 15)) --mib 0 --blk /dev/vda >"$work/bench.txt"
	perf probe -q -d 'probe_vnpu_profile:*'
	perf script -i "$work/host.data" -F tid,time,event,trace \
		>"$work/host.txt" 2>/dev/null
	cat "$work/bench.txt"
	host_args=(--host "$work/host.txt")
else
	echo "vm-profile: host probes skipped (needs root and perf)" >&2
fi
python3 "$repo/scripts/lib/vm_profile.py" --guest "$work/guest.trace" \
	"${host_args[@]}"
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp -r "$work"/. "$keep"/
fi
