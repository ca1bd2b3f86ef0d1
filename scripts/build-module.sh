#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds vnpu.ko (kernel-module/) against the headers of Debian's newest
# Linux 6.12 kernel (bookworm-backports on Debian 12, the release itself on
# Debian 13) and prints the .ko's path on stdout (progress goes to stderr).
#
#   scripts/build-module.sh [--print-release]
#
# --print-release  print the kernel release the module is built for and exit
#
# The kernel is the 6.12 one linux-image-amd64 depends on (kernel_image in
# scripts/lib/apt.sh), asked from apt each run (never written down here);
# its linux-headers package is installed when missing. The build runs in a copy of the sources
# under $VNPU_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vnpu)/module/
# <release>/, so kbuild writes nothing into the checkout. A build is keyed by
# the hash of its inputs (the module sources, the device and UAPI headers,
# this script, the release): when the key matches, the cached .ko is printed
# without rebuilding.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

print_release=0
for arg in "$@"; do
	case $arg in
	--print-release) print_release=1 ;;
	*)
		echo "usage: $0 [--print-release]" >&2
		exit 2
		;;
	esac
done

# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh
jobs=${VNPU_JOBS:-2}
log() { echo "build-module: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

"$repo/scripts/deps.sh" >&2
# The kernel and its headers: bookworm-backports on Debian 12.
ensure_apt_sources

read -r image _ < <(kernel_image) ||
	die "apt knows no linux-image-amd64 of Linux 6.12 ($vnpu_suite)"
release=${image#linux-image-}
if [ "$print_release" -eq 1 ]; then
	echo "$release"
	exit 0
fi

headers=/usr/src/linux-headers-$release
if [ ! -f "$headers/Makefile" ]; then
	log "installing linux-headers-$release"
	apt_get install -y -qq --no-install-recommends \
		"${apt_from[@]}" "linux-headers-$release" >/dev/null
fi
[ -f "$headers/Makefile" ] || die "no kbuild tree at $headers"

inputs=(Kbuild kernel-module include/vnpu include/uapi/drm/vnpu_accel.h
	scripts/build-module.sh)
key=$( (
	echo "$release"
	find "${inputs[@]}" -type f ! -name '*.o' ! -name '*.ko' \
		! -name '*.cmd' ! -name '*.mod*' -print0 | sort -z |
		xargs -0 sha256sum
) | sha256sum | cut -c1-16)

# One directory per key, built aside and renamed into place: checkouts
# (or sessions) sharing the cache never build into, or boot, each other's.
out=$cache/module/$release-$key
ko=$out/src/kernel-module/vnpu.ko
if [ -f "$ko" ]; then
	log "up to date ($release, key $key)"
	echo "$ko"
	exit 0
fi

log "building vnpu.ko for $release"
mkdir -p "$cache/module"
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/include/uapi/drm"
cp -r Kbuild kernel-module "$tmp/src/"
cp -r include/vnpu "$tmp/src/include/"
cp include/uapi/drm/vnpu_accel.h "$tmp/src/include/uapi/drm/"
if ! make -C "$headers" M="$tmp/src" -j"$jobs" modules >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log" >&2
	die "build failed"
fi
[ -f "$tmp/src/kernel-module/vnpu.ko" ] || die "kbuild produced no vnpu.ko"
# The module records no build path a later use depends on: move it.
if ! mv -T "$tmp" "$out" 2>/dev/null; then
	[ -f "$ko" ] || die "cannot publish $out"
fi
trap - EXIT
keep_newest 4 "$cache/module" "$release-*" '*.tmp.*'
echo "$ko"
