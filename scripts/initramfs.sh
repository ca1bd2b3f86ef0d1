#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the vnpu guest's initramfs (a gzip'd newc cpio) and prints its path.
#
#   scripts/initramfs.sh [--guest DIR] [--module vnpu.ko] [--firmware FILE]
#                        [--add SRC:DST]... [--out FILE] [--print-key]
#
# --guest     the guest kernel dir (default: what scripts/guest-kernel.sh
#             prints)
# --module    our vnpu.ko, built against that kernel; optional: without it
#             the guest boots with the DRM modules only. With it, the guest
#             loads it at boot.
# --firmware  installed as /lib/firmware/vnpu/vnpu.fw (build-dir/tools/vnpu.fw)
# --add       a file or directory copied to DST in the guest; the shared
#             libraries of every ELF file in it are added (from ldd, at the
#             paths ldd resolves; others, such as a build tree's, in
#             /opt/vnpu/lib, which is on the guest's LD_LIBRARY_PATH), so
#             host-built binaries run unchanged. A library found inside an
#             added directory is not copied again: the build's
#             $ORIGIN-relative run paths find it there.
# --out       where to write the image; by default a cache file keyed by
#             every input, reused when nothing changed.
# --print-key print that key and build nothing
#
# Contents: busybox-static and its applet links, the init and hotplug helper
# from scripts/guest/, /etc/passwd and /etc/group with root, user 'vnpu'
# (uid 1000) and group 'accel' (gid 990, vnpu is a member), the DRM modules
# the driver needs (drm, drm_kms_helper, drm_shmem_helper, gpu-sched,
# drm_buddy, drm_exec, drm_gpuvm) and vgem, with their dependencies from
# the kernel's modules.dep, decompressed (busybox modprobe passes a module
# file to init_module() as it is), and a modules.dep of our own from depmod,
# so the guest loads them with modprobe. Override the module list with
# VNPU_GUEST_MODULES (space-separated). The 9p modules (9p, 9pnet_virtio)
# and virtio_blk are in the image too but loaded only for scripts/vm.sh
# --host-root and --bench-disk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

guest=""
module=""
firmware=""
out=""
adds=()
print_key=0
usage() {
	sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--guest) guest=${2:?}; shift 2 ;;
	--module) module=${2:?}; shift 2 ;;
	--firmware) firmware=${2:?}; shift 2 ;;
	--add) adds+=("${2:?}"); shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--print-key) print_key=1; shift ;;
	*) usage ;;
	esac
done

# shellcheck source=scripts/lib/cache.sh
. "$here/lib/cache.sh"
log() { echo "initramfs: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=scripts/lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
need=()
[ -x /bin/busybox ] || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || [ -x /usr/sbin/depmod ] || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt_get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# ldd fails on a static binary.
! ldd /bin/busybox >/dev/null 2>&1 ||
	die "/bin/busybox is not static (install busybox-static)"
PATH=$PATH:/usr/sbin:/sbin

[ -n "$guest" ] || guest=$("$here/guest-kernel.sh")
kver=$(basename "$(find "$guest/lib/modules" -mindepth 1 -maxdepth 1 -type d |
	head -1)")
[ -f "$guest/vmlinuz" ] && [ -f "$guest/lib/modules/$kver/modules.dep" ] ||
	die "$guest is not a guest kernel dir (scripts/guest-kernel.sh)"
[ -z "$module" ] || [ -f "$module" ] || die "no module $module"
[ -z "$firmware" ] || [ -f "$firmware" ] || die "no firmware $firmware"
for a in "${adds[@]}"; do
	case $a in
	*:/*) [ -e "${a%%:*}" ] || die "--add $a: no ${a%%:*}" ;;
	*) die "--add $a: want SRC:/absolute/DST" ;;
	esac
done

modules_wanted=${VNPU_GUEST_MODULES:-drm drm_kms_helper drm_shmem_helper \
gpu-sched drm_buddy drm_exec drm_gpuvm vgem}
# Loaded by /init only when asked: the host's root (--host-root), the
# benchmark's disk (--bench-disk).
on_demand_modules="9p 9pnet_virtio virtio_blk"

work=$(mktemp -d "${TMPDIR:-/tmp}/vnpu-initramfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/stage

# ---- shared libraries of the added programs ----------------------------------
# Resolved before the cache key, which names them: an image never outlives
# the libraries it copied, and one that would lack a library is never made.
is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = \
	'177ELF' ]; }
add_roots=()
for a in "${adds[@]}"; do
	[ -d "${a%%:*}" ] && add_roots+=("$(cd "${a%%:*}" && pwd)")
done
libs=$work/libs
for a in "${adds[@]}"; do
	find "${a%%:*}" -type f \( -perm -u+x -o -name '*.so*' \) -print0
done | while IFS= read -r -d '' f; do
	is_elf "$f" || continue
	{ ldd "$f" 2>/dev/null || true; } | awk -v f="$f" '
		$2 == "=>" && $3 == "not" {print "MISSING " $1 " (needed by " f ")"}
		$2 == "=>" && $3 ~ /^\// {print $3}
		$1 ~ /^\// {print $1}'
done | sort -u >"$libs"
if grep -q '^MISSING ' "$libs"; then
	sed -n 's/^MISSING /initramfs: no library /p' "$libs" >&2
	exit 1
fi

inside_added() {
	local r
	for r in "${add_roots[@]}"; do
		case $1 in "$r"/*) return 0 ;; esac
	done
	return 1
}
# Where a library goes in the image; nothing when an added directory
# already holds it.
lib_dest() {
	inside_added "$(readlink -f "$1")" && return 0
	case $1 in
	/lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) echo "$1" ;;
	# A build tree's library next to a binary added alone: its run path
	# does not lead there in the guest, LD_LIBRARY_PATH does (/init).
	*) echo "/opt/vnpu/lib/$(basename "$1")" ;;
	esac
}

# ---- cache key ---------------------------------------------------------------
# File contents for the small inputs; size and mtime for added trees and
# the libraries they use (build dirs can be large, and a rebuild or an
# upgrade changes the mtime of what it touched). Where things are in the
# image, never where they are on this machine: another checkout with the
# same inputs gets the same image.
key=$({
	cat "$guest/package"
	echo "$modules_wanted $on_demand_modules"
	(cd "$here" && sha256sum initramfs.sh guest/*)
	sha256sum </bin/busybox
	[ -z "$module" ] || sha256sum <"$module"
	[ -z "$firmware" ] || sha256sum <"$firmware"
	for a in "${adds[@]}"; do
		echo "add ${a#*:}"
		find "${a%%:*}" -printf '%P %y %s %T@\n' | sort
	done
	while IFS= read -r lib; do
		echo "$(lib_dest "$lib") $(stat -L -c '%s %Y' "$lib")"
	done <"$libs"
} | sha256sum | cut -c1-16)
if [ "$print_key" -eq 1 ]; then
	echo "$key"
	exit 0
fi
if [ -z "$out" ]; then
	mkdir -p "$cache/initramfs"
	out=$cache/initramfs/$key.cpio.gz
	if [ -f "$out" ]; then
		touch "$out"
		log "up to date ($out)"
		echo "$out"
		exit 0
	fi
fi

log "building ($kver${module:+, with $(basename "$module")})"
mkdir "$stage"

# ---- base system ------------------------------------------------------------
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc/vnpu,proc,sys,dev,tmp,run} \
	"$stage"/{root,home/vnpu,lib/firmware/vnpu,vnpu}
cp /bin/busybox "$stage/bin/busybox"
/bin/busybox --list-full | while read -r applet; do
	[ -e "$stage/$applet" ] || ln -s /bin/busybox "$stage/$applet"
done
install -m 0755 "$here/guest/init" "$stage/init"
install -m 0755 "$here/guest/vnpu-hotplug" "$stage/sbin/vnpu-hotplug"
cat >"$stage/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
vnpu:x:1000:1000:vnpu:/home/vnpu:/bin/sh
EOF
cat >"$stage/etc/group" <<'EOF'
root:x:0:
accel:x:990:vnpu
vnpu:x:1000:
EOF
cat >"$stage/etc/shadow" <<'EOF'
root:*:19000:0:99999:7:::
vnpu:*:19000:0:99999:7:::
EOF
chmod 0600 "$stage/etc/shadow"
echo "vnpu-guest" >"$stage/etc/hostname"
# The shell of 'vm.sh shell' is a login shell: /init is not busybox init, so
# power off directly.
cat >"$stage/etc/profile" <<'EOF'
alias poweroff='poweroff -f' halt='poweroff -f' reboot='poweroff -f'
PS1='vnpu-guest:\w\$ '
EOF

# ---- kernel modules ----------------------------------------------------------
modinfo_field() { modinfo -F "$1" "$2" 2>/dev/null || true; }
if [ -n "$module" ]; then
	vnpu_deps=$(modinfo_field depends "$module" | tr ',' ' ')
	modules_wanted="$modules_wanted $vnpu_deps"
	module_kver=$(modinfo_field vermagic "$module" | awk '{print $1}')
	[ "$module_kver" = "$kver" ] ||
		die "$module is built for '$module_kver', the guest runs $kver"
fi
mdir=lib/modules/$kver
for m in $modules_wanted $on_demand_modules; do
	modprobe -d "$guest" -S "$kver" --show-depends "$m" ||
		die "the guest kernel has no module $m"
done | awk '$1 == "insmod" {print $2}' | sort -u | while read -r path; do
	# Stored uncompressed: busybox modprobe hands the file to
	# init_module() as is, and the initramfs is compressed anyway.
	rel=${path#"$guest"/}
	mkdir -p "$stage/$(dirname "$rel")"
	case $rel in
	*.ko.xz) xz -dc "$path" >"$stage/${rel%.xz}" ;;
	*) cp "$path" "$stage/$rel" ;;
	esac
done
cp "$guest/$mdir"/modules.{builtin,builtin.modinfo,order} "$stage/$mdir/"
if [ -n "$module" ]; then
	mkdir -p "$stage/$mdir/extra"
	cp "$module" "$stage/$mdir/extra/vnpu.ko"
	touch "$stage/etc/vnpu/load-vnpu"
fi
depmod -b "$stage" "$kver"
echo "$modules_wanted" | tr ' ' '\n' | grep -v '^$' >"$stage/etc/vnpu/modules"
[ -z "$firmware" ] || cp "$firmware" "$stage/lib/firmware/vnpu/vnpu.fw"

# ---- user space --------------------------------------------------------------
for a in "${adds[@]}"; do
	src=${a%%:*}
	dst=${a#*:}
	mkdir -p "$stage$(dirname "$dst")"
	if [ -d "$src" ]; then
		rm -rf "${stage:?}$dst"
		cp -a "$src" "$stage$dst"
	else
		cp -a "$src" "$stage$dst"
	fi
done
while read -r lib; do
	dest=$(lib_dest "$lib")
	[ -n "$dest" ] || continue
	[ -e "$stage$dest" ] && continue
	mkdir -p "$stage$(dirname "$dest")"
	cp -L "$lib" "$stage$dest"
done <"$libs"

# ---- archive -----------------------------------------------------------------
# /dev/console must exist before init runs (the kernel opens it for init's
# stdio); a one-entry archive made here avoids needing root for mknod.
tmp_out=$out.tmp.$$
{
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc -R 0:0)
	python3 - <<'PY'
import sys
def entry(name, mode, rdev_major=0, rdev_minor=0, data=b""):
    name_b = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        0, mode, 0, 0, 1, 0, len(data), 0, 0,
        rdev_major, rdev_minor, len(name_b), 0))
    blob = hdr.encode() + name_b
    blob += b"\0" * (-len(blob) % 4) + data
    return blob + b"\0" * (-len(blob) % 4)
sys.stdout.buffer.write(entry("dev/console", 0o020600, 5, 1) +
                        entry("TRAILER!!!", 0))
PY
} | gzip -6 >"$tmp_out"
mv "$tmp_out" "$out"
# Keep the five newest cached images.
if [ "$(dirname "$out")" = "$cache/initramfs" ]; then
	keep_newest 5 "$cache/initramfs" '*.cpio.gz'
fi
log "$(du -h "$out" | cut -f1) $out"
echo "$out"
