#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The guest kernel: Debian's newest Linux 6.12 (the version
# linux-image-amd64 currently depends on, from bookworm-backports on Debian
# 12 and the release itself on 13; asked from apt, never written down here),
# downloaded with `apt-get download` and extracted into a cache outside the
# checkout. Nothing is installed on the host.
#
#   scripts/guest-kernel.sh                 prepare, print the guest dir
#   scripts/guest-kernel.sh --print-version print the kernel release only
#                                           (e.g. for building the module
#                                           against the matching headers)
#
# The guest dir, $VNPU_CACHE/guest/<release>/ (VNPU_CACHE defaults to
# ${XDG_CACHE_HOME:-$HOME/.cache}/vnpu), holds:
#   vmlinuz, config, System.map      from the package's /boot
#   vmlinux                          the ELF kernel inside vmlinuz (PVH boot)
#   lib/modules/<release>/           every module (.ko.xz, the kernel
#                                    decompresses them itself) with
#                                    modules.dep from depmod
#   package                          the package name and version
# scripts/initramfs.sh takes the modules it needs from there. Progress goes
# to stderr, the answer to stdout.
set -euo pipefail

print_version=0
for arg in "$@"; do
	case $arg in
	--print-version) print_version=1 ;;
	*)
		echo "usage: $0 [--print-version]" >&2
		exit 2
		;;
	esac
done

# shellcheck source=scripts/lib/cache.sh
. "$(dirname "$0")/lib/cache.sh"
log() { echo "guest-kernel: $*" >&2; }

# shellcheck source=scripts/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"

# apt-cache takes seconds; its answer only changes with the package lists, so
# it is remembered per state of /var/lib/apt/lists.
lists_state() {
	{ find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' \
		-printf '%T@ %s %f\n' 2>/dev/null || true; } | sort |
		sha256sum | cut -c1-16
}
memo=$cache/guest/discovered
found=""
if [ -f "$memo" ]; then
	read -r memo_state memo_pkg memo_ver <"$memo" || true
	[ "${memo_state:-}" = "$(lists_state)" ] && found="$memo_pkg $memo_ver"
fi
if [ -z "$found" ]; then
	ensure_apt_sources
	# "<image package> <version>", the same kernel build-module.sh
	# builds for
	found=$(kernel_image) || {
		log "apt knows no linux-image-amd64 of Linux 6.12 ($vnpu_suite)"
		exit 1
	}
	mkdir -p "$cache/guest"
	echo "$(lists_state) $found" >"$memo"
fi
read -r pkg pkgver <<<"$found"
kver=${pkg#linux-image-}

if [ "$print_version" -eq 1 ]; then
	echo "$kver"
	exit 0
fi

# vmlinux: the ELF kernel inside vmlinuz (Debian compresses it with zstd).
# QEMU boots it through its PVH entry point, without the real-mode setup
# and the decompressor, which take seconds under TCG. Only a kernel without
# a PVH note has no vmlinux (remembered as no-vmlinux); then scripts/vm.sh
# boots vmlinuz. The tools are installed first, so that a machine that
# lacked them never records a verdict about the kernel.
extract_vmlinux() {
	local d=$1 off need=()
	command -v zstd >/dev/null || need+=(zstd)
	command -v readelf >/dev/null || need+=(binutils)
	if [ ${#need[@]} -gt 0 ]; then
		log "installing ${need[*]}"
		apt_get install -y -qq --no-install-recommends "${need[@]}" \
			>/dev/null || {
			log "cannot install ${need[*]}"
			exit 1
		}
	fi
	for off in $(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$d/vmlinuz" |
		cut -d: -f1 | head -4); do
		tail -c +$((off + 1)) "$d/vmlinuz" | zstd -dcq 2>/dev/null \
			>"$d/vmlinux.tmp" || true
		if [ "$(head -c4 "$d/vmlinux.tmp" | od -An -c | tr -d ' ')" = \
			'177ELF' ] && readelf -n "$d/vmlinux.tmp" 2>/dev/null |
			grep -q 'Xen.*0x00000012\|PHYS32_ENTRY'; then
			mv "$d/vmlinux.tmp" "$d/vmlinux"
			return 0
		fi
	done
	rm -f "$d/vmlinux.tmp"
	log "no PVH kernel found inside vmlinuz; the VM boots vmlinuz"
}

dir=$cache/guest/$kver
if [ -f "$dir/package" ] && [ "$(cat "$dir/package")" = "$pkg $pkgver" ]; then
	[ -f "$dir/vmlinux" ] || [ -f "$dir/no-vmlinux" ] || {
		extract_vmlinux "$dir"
		[ -f "$dir/vmlinux" ] || touch "$dir/no-vmlinux"
	}
	echo "$dir"
	exit 0
fi

# depmod (kmod) computes modules.dep for the extracted tree.
if ! command -v depmod >/dev/null && [ ! -x /usr/sbin/depmod ] &&
	[ ! -x /sbin/depmod ]; then
	log "installing kmod (depmod)"
	apt_get install -y -qq --no-install-recommends kmod >/dev/null
fi
depmod=$(command -v depmod || echo /usr/sbin/depmod)

tmp=$cache/guest/.tmp-$kver.$$
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp/root"
log "downloading $pkg $pkgver"
(cd "$tmp" && apt-get download -q "$pkg=$pkgver" >/dev/null 2>&1) || {
	log "apt-get download $pkg=$pkgver failed"
	exit 1
}
log "extracting $pkg"
dpkg-deb -x "$tmp"/*.deb "$tmp/root"
rm -f "$tmp"/*.deb
# Debian 13's kernel packages ship the modules in /usr/lib/modules (merged
# /usr), Debian 12's in /lib/modules: /lib is made the link to usr/lib it is
# in a merged root, so the tree and depmod (either way) find them.
if [ ! -e "$tmp/root/lib" ] && [ -d "$tmp/root/usr/lib/modules" ]; then
	ln -s usr/lib "$tmp/root/lib"
fi
mods=$tmp/root/lib/modules/$kver
if [ ! -f "$tmp/root/boot/vmlinuz-$kver" ] || [ ! -d "$mods/kernel" ]; then
	log "the package has no /boot/vmlinuz-$kver or modules"
	exit 1
fi
log "depmod $kver"
"$depmod" -b "$tmp/root" "$kver"

rm -rf "$dir"
mkdir -p "$dir/lib/modules"
mv "$tmp/root/boot/vmlinuz-$kver" "$dir/vmlinuz"
mv "$tmp/root/boot/config-$kver" "$dir/config"
mv "$tmp/root/boot/System.map-$kver" "$dir/System.map"
mv "$mods" "$dir/lib/modules/$kver"
extract_vmlinux "$dir"
[ -f "$dir/vmlinux" ] || touch "$dir/no-vmlinux"
echo "$pkg $pkgver" >"$dir/package"
log "ready: $dir"
echo "$dir"
