#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds qemu-system-x86_64 (QEMU 10.0.x from Debian's source package) with the
# vnpu device compiled in, and prints the binary's path on stdout (progress
# goes to stderr).
#
#   scripts/build-qemu.sh [--print-path] [--fuzz]
#
# --print-path  print the path of the cached binary and build nothing (fails
#               when the cache does not match the current inputs)
# --fuzz        the libFuzzer build (clang, ASan, UBSan): qemu-fuzz-x86_64
#
# Everything lives outside the checkout, in $VNPU_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/vnpu): the source tarball, the pristine
# tree, and one patched tree + build directory per variant. The upstream tree
# is only touched by two build hooks (hw/Kconfig, hw/meson.build) and the
# pc-bios edk2 neutralisation; our files are copied to hw/vnpu/. A build is
# keyed by the hash of every input (our sources, the tarball checksum, the
# configure flags, this script): its binary is copied to
# $VNPU_CACHE/bin/<variant>-<key>/ (with the qemu-bundle data directory QEMU
# looks for next to it), so a later build for other inputs - another
# checkout sharing the cache - never changes a binary in use. When the key
# has a binary, nothing is built; otherwise the build directory is updated
# incrementally (under a lock) and the new binary copied out.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

variant=system
print_only=0
for arg in "$@"; do
	case $arg in
	--print-path) print_only=1 ;;
	--fuzz) variant=fuzz ;;
	*)
		echo "usage: $0 [--print-path] [--fuzz]" >&2
		exit 2
		;;
	esac
done

jobs=${VNPU_JOBS:-2}
log() { echo "build-qemu: $*" >&2; }

# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

# ---- dependencies ----------------------------------------------------------
packages=(build-essential ninja-build pkg-config python3 python3-venv
	libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev flex bison
	xz-utils dpkg-dev seabios ipxe-qemu qemu-system-data)

meson_ok() {
	local v
	v=$(/usr/bin/meson --version 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge 1.5
}
if [ "$print_only" -eq 0 ]; then
	# clang and its compiler-rt (libclang-rt-N-dev, N the release's clang)
	if [ "$variant" = fuzz ]; then
		if ! rt=$(clang_rt_dev); then
			ensure_apt_sources
			rt=$(clang_rt_dev) || { log "apt knows no clang"; exit 1; }
		fi
		packages+=(clang "$rt")
	fi
	missing=()
	for p in "${packages[@]}"; do
		apt_installed "$p" || missing+=("$p")
	done
	# QEMU 10.0's source: bookworm-backports on Debian 12, the release
	# itself from Debian 13 on (scripts/lib/apt.sh).
	ensure_apt_sources
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		apt_get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
	# QEMU 10 needs meson >= 1.5 and pycotap (configure checks it even
	# without tests); the +ds tarball bundles neither wheel.
	if ! meson_ok || ! apt_installed python3-pycotap; then
		log "installing meson and pycotap from $vnpu_suite"
		apt_get install -y -qq --no-install-recommends \
			"${apt_from[@]}" meson python3-pycotap >/dev/null
	fi
fi

# ---- QEMU source -------------------------------------------------------------
# The newest 10.0.x source package apt knows, and its orig tarball's checksum.
read -r qemu_debver tarball tar_sha < <(apt-cache showsrc qemu 2>/dev/null |
	awk '/^Version: /{v=$2} /^Checksums-Sha256:/{s=1; next}
	     /^[^ ]/{s=0}
	     s && v ~ /^1:10\.0\./ && $3 ~ /orig\.tar\.xz$/ {print v, $3, $1}' |
	sort -V | tail -1) || true
if [ -z "${tarball:-}" ]; then
	echo "build-qemu: apt knows no QEMU 10.0.x source ($vnpu_suite)" >&2
	exit 1
fi
qemu_ver=${tarball#qemu_}
qemu_ver=${qemu_ver%%+*}
qemu_ver=${qemu_ver%.orig.tar.xz}

mkdir -p "$cache/src"
if [ "$print_only" -eq 0 ]; then
	fetch_orig qemu "$qemu_debver" "$cache/src" "$tarball" "$tar_sha" ||
		exit 1
fi

# ---- configure flags and the cache key -------------------------------------
common_flags=(--target-list=x86_64-softmmu --prefix=/usr/local
	--python=/usr/bin/python3 --disable-download --disable-install-blobs
	--enable-fdt=system --disable-docs --disable-tools --disable-werror)
if [ "$variant" = fuzz ]; then
	flags=("${common_flags[@]}" --cc=clang --cxx=clang++ --enable-fuzzing
		--enable-asan --enable-ubsan)
	target=qemu-fuzz-x86_64
else
	flags=("${common_flags[@]}")
	target=qemu-system-x86_64
fi

overlay_dirs=(qemu-device firmware-sim kernels include)
key=$({
	echo "$tar_sha ${flags[*]}"
	# Contents and checkout-relative names, never the checkout's path:
	# another checkout of the same sources shares the build.
	sha256sum <scripts/build-qemu.sh
	(cd "$repo" && find "${overlay_dirs[@]}" -type f -print0 | sort -z |
		xargs -0 sha256sum)
} | sha256sum | cut -c1-16)

tree=$cache/qemu-$qemu_ver-$variant
build=$tree/build
result=$cache/bin/$variant-$key
binary=$result/$target

if [ -x "$binary" ]; then
	log "up to date (key $key)"
	echo "$binary"
	exit 0
fi
if [ "$print_only" -eq 1 ]; then
	echo "build-qemu: no build for the current inputs (key $key);" \
		"run scripts/build-qemu.sh" >&2
	exit 1
fi

# One build per variant at a time (checkouts may share the cache).
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.lock-$variant"
flock 9

# ---- pristine tree, patched copy, overlay ----------------------------------
pristine=$cache/qemu-$qemu_ver
if [ ! -f "$pristine/VERSION" ]; then
	log "extracting $tarball"
	rm -rf "$pristine" "$pristine.tmp"
	mkdir -p "$pristine.tmp"
	tar -C "$pristine.tmp" --strip-components=1 -xf "$cache/src/$tarball"
	mv "$pristine.tmp" "$pristine"
fi
if [ ! -f "$tree/.vnpu-hooks" ]; then
	log "copying the tree to $tree"
	rm -rf "$tree"
	cp -a "$pristine" "$tree"
	# The two build hooks.
	echo 'source vnpu/Kconfig' >>"$tree/hw/Kconfig"
	echo "subdir('vnpu')" >>"$tree/hw/meson.build"
	# The +ds tarball has no edk2 blobs: unpacking them fails when bzip2
	# is installed.
	sed -i "s/^if unpack_edk2_blobs$/if unpack_edk2_blobs and fs.exists('edk2-x86_64-code.fd.bz2')/" \
		"$tree/pc-bios/meson.build"
	grep -q "fs.exists('edk2-x86_64-code.fd.bz2')" "$tree/pc-bios/meson.build"
	touch "$tree/.vnpu-hooks"
fi

# hw/vnpu/: qemu-device/* at its top, firmware-sim/, kernels/, include/ below.
# Only changed files are rewritten so that ninja rebuilds only what changed.
sync_file() {
	if ! cmp -s "$1" "$2"; then
		mkdir -p "$(dirname "$2")"
		cp "$1" "$2"
	fi
}
dest=$tree/hw/vnpu
mkdir -p "$dest"
wanted=$(mktemp)
trap 'rm -f "$wanted"' EXIT
for d in "${overlay_dirs[@]}"; do
	while IFS= read -r -d '' f; do
		if [ "$d" = qemu-device ]; then
			rel=${f#qemu-device/}
		else
			rel=$f
		fi
		sync_file "$repo/$f" "$dest/$rel"
		echo "$rel" >>"$wanted"
	done < <(cd "$repo" && find "$d" -type f -print0)
done
# Files removed from the checkout go from the overlay too.
(cd "$dest" && find . -type f | sed 's|^\./||') | sort |
	comm -23 - <(sort "$wanted") | while IFS= read -r stale; do
	rm -f "$dest/$stale"
done

# ---- configure and build ----------------------------------------------------
if [ ! -f "$build/build.ninja" ] ||
	[ "$(cat "$build/vnpu-flags" 2>/dev/null)" != "${flags[*]}" ]; then
	log "configuring ($variant): ${flags[*]}"
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$build" && ../configure "${flags[@]}") >"$tree/configure.log" 2>&1 || {
		tail -40 "$tree/configure.log" >&2
		exit 1
	}
	echo "${flags[*]}" >"$build/vnpu-flags"
fi
# scripts/vm.sh --host-root shares the host's / over virtio-9p. meson turns
# virtfs on by itself where it can (on Debian 12 glibc's xattr functions are
# all it needs); asking for it with --enable-virtfs would change the flags and
# so rebuild every existing tree from scratch, so check the result instead.
if [ "$variant" = system ] &&
	! grep -q '^#define CONFIG_VIRTFS' "$build/config-host.h"; then
	echo "build-qemu: QEMU was configured without virtfs (virtio-9p), which" \
		"scripts/vm.sh --host-root needs; see $tree/configure.log" >&2
	exit 1
fi
log "building $target in $build (ninja -j$jobs)"
ninja -C "$build" -j"$jobs" "$target" >&2

# Firmware from the build tree: QEMU relocates its data directory to
# build/qemu-bundle/<prefix>/share/qemu when run uninstalled, so the
# configured firmware path is not searched; link Debian's SeaBIOS and iPXE
# ROMs and qemu-system-data files there.
datadir=$build/qemu-bundle/usr/local/share/qemu
mkdir -p "$datadir"
for f in /usr/share/qemu/* /usr/share/seabios/* /usr/lib/ipxe/qemu/*; do
	[ -e "$f" ] || continue
	base=$(basename "$f")
	# QEMU's own files stay; a link left dangling by an upgrade is redone.
	[ -e "$datadir/$base" ] ||
		{ rm -f "$datadir/$base" && ln -s "$f" "$datadir/$base"; }
done

# The result: the binary and its data directory, copied out of the build
# tree (the firmware links are absolute), published by a rename. Only the
# newest results of the variant are kept.
tmp=$result.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$build/$target" "$tmp/"
cp -a "$build/qemu-bundle" "$tmp/"
rm -rf "$result"
mv "$tmp" "$result"
keep_newest 3 "$cache/bin" "$variant-*" '*.tmp.*'
log "done (key $key)"
echo "$binary"
