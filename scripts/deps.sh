#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing vnpu needs from Debian's archive, only
# when something is missing, so a second run costs nothing. On Debian 12
# meson comes from bookworm-backports (QEMU 10 needs >= 1.5; Debian 13 has
# 1.7 itself), so the whole tree uses one meson (scripts/lib/apt.sh).
set -euo pipefail

packages=(
	build-essential ninja-build pkg-config python3
	check                   # unit tests
	clang                   # libFuzzer and the sanitizers (clang_rt_dev below)
	libopenblas-dev         # GEMM benchmark baseline only
	libdrm-dev              # the runtime's drm backend
	shellcheck              # the scripts suite lints every script
	gdb                     # a crashed QEMU's backtrace (scripts/vm.sh)
	debhelper dh-dkms dh-python lintian  # the Debian packages (scripts/package.sh)
)
# shellcheck source=scripts/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"

# compiler-rt of the release's clang: libclang-rt-14-dev on Debian 12, -19-
# on 13. apt names it once the package lists are there.
if ! rt=$(clang_rt_dev); then
	ensure_apt_sources
	rt=$(clang_rt_dev) || { echo "deps: apt knows no clang" >&2; exit 1; }
fi
packages+=("$rt")

missing=()
for p in "${packages[@]}"; do
	apt_installed "$p" || missing+=("$p")
done
meson_ok=0
if command -v meson >/dev/null &&
	dpkg --compare-versions "$(meson --version)" ge 1.5; then
	meson_ok=1
fi
[ ${#missing[@]} -eq 0 ] && [ $meson_ok -eq 1 ] && exit 0

echo "deps: installing ${missing[*]}$([ $meson_ok -eq 1 ] ||
	echo " meson($vnpu_suite)")"
ensure_apt_sources
[ ${#missing[@]} -eq 0 ] ||
	apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ $meson_ok -eq 1 ] ||
	apt_get install -y -qq --no-install-recommends \
		"${apt_from[@]}" meson >/dev/null
