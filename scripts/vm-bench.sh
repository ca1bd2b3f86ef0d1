#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The driver path's round trips in one boot: bench-drm in the guest through
# vnpu.ko - the null ioctl, the SUBMIT ioctl, the null job - next to the
# same round trip on QEMU's best-tuned device in the same VM, a 512-byte
# O_DIRECT read of virtio-blk with an iothread of its own (scripts/vm.sh
# --bench-disk), and the runtime's copies. Figures only: nothing fails on
# a slow run.
#
#   scripts/vm-bench.sh [--build DIR] [--iters N] [-- VM.SH OPTIONS...]
#
# --build  the meson build dir holding bench-drm and vnpu.fw (default
#          build); built first
# --iters  round trips of each kind, medians printed (default 2000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

build=build
iters=2000
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift 2 ;;
	--iters) iters=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) sed -n '10,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$repo/$build ;; esac
[ -f "$build/build.ninja" ] || { echo "no meson build dir $build" >&2; exit 2; }

ninja -C "$build" workloads/bench/bench-drm tools/vnpu.fw >&2
ko=$("$repo/scripts/build-module.sh")
exec "$repo/scripts/vm.sh" run --module "$ko" \
	--firmware "$build/tools/vnpu.fw" --bench-disk \
	--add "$build/workloads/bench/bench-drm:/opt/vnpu/bin/bench-drm" "$@" -- \
	/opt/vnpu/bin/bench-drm --iters "$iters" --blk /dev/vda
