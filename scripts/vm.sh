#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boots the vnpu guest (Debian's 6.12 kernel, a busybox initramfs) in
# our QEMU with the vnpu PCI device, and runs a command in it or opens a
# shell. See docs/vm.md.
#
#   scripts/vm.sh run [OPTIONS] -- COMMAND [ARGS...]
#   scripts/vm.sh shell [OPTIONS]
#   scripts/vm.sh check-log FILE...
#
# run: prints the command's stdout on stdout and its stderr on stderr as it
#      runs, and exits with its exit status. Exits 124 when the time limit
#      kills the VM, 125 when the guest never reported a status (crash,
#      panic, boot failure) or when the guest kernel logged a WARN, BUG,
#      oops, panic or call trace (the lines are printed).
# shell: an interactive shell on the serial console (Ctrl-A X quits QEMU).
# check-log: the kernel-log scanner alone (exit 1 and the lines on a hit).
#
# Options:
#   --user             run the command as user 'vnpu' (group 'accel')
#   --host-root        share the host's /usr and the current directory
#                      read-only (virtio-9p, nosuid, nodev) and run the
#                      command chrooted in a root made of them, from the
#                      current directory, with the guest's /dev, /proc,
#                      /sys, a tmpfs /tmp (HOME=/tmp/home) and a minimal
#                      /etc: the host's Python and libraries with our
#                      module and firmware, never its /etc, /root or /home
#   --timeout S        time limit in seconds for the whole run, boot
#                      included (default 600)
#   --module PATH      our vnpu.ko, loaded at boot
#   --firmware PATH    installed as /lib/firmware/vnpu/vnpu.fw
#   --add SRC:DST      copy SRC (file or dir) to DST in the guest (repeatable)
#   --device-opts OPTS properties for -device vnpu (e.g. cores=2,test-mode=on)
#   --no-device        no vnpu device
#   --bench-disk       a 1 MiB raw disk image on virtio-blk with its own
#                      iothread (/dev/vda in the guest): the reference device
#                      of bench-drm's round trips
#   --smp N            vCPUs (default 2)     --mem SIZE  memory (default 2G)
#   --memory-checks    boot the guest kernel with SLUB debugging (poisoned,
#                      checked, red-zoned objects) and KFENCE: Debian ships
#                      no KASAN kernel, but these are built in, and turn a
#                      use-after-free or overflow into a BUG in the log
#   --accel A          auto (default), tcg or kvm
#   --qemu PATH        qemu-system-x86_64 (default: $VNPU_QEMU, else what
#                      scripts/build-qemu.sh builds)
#   --quiet            no progress messages
#
# State between runs lives in $VNPU_VM_STATE (default $VNPU_CACHE/vm): the
# logs of failed runs (runs/, the ten newest) and whether KVM could boot the
# guest on this host kernel (kvm-<release>). Nothing in it is needed: a
# machine that never ran the VM has none of it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib/cache.sh
. "$here/lib/cache.sh"
state=${VNPU_VM_STATE:-$cache/vm}

quiet=0
log() { [ "$quiet" -eq 1 ] || echo "vm: $*" >&2; }
die() { echo "vm: $*" >&2; exit 2; }
usage() {
	sed -n '7,9p;19,46p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# The scanner: lines that mean the kernel went wrong. A match fails the run.
bad_log_regex='WARNING: CPU|------------\[ cut here \]|BUG: |kernel BUG at|Oops|Call Trace:|Kernel panic|general protection fault|UBSAN:|KASAN:|refcount_t:|list_(add|del) corruption|INFO: task .* blocked for|detected stalls|soft lockup|hard LOCKUP|RIP: 00'
check_log() {
	local f hits=0 lines
	for f in "$@"; do
		[ -f "$f" ] || continue
		lines=$(grep -a -n -E -- "$bad_log_regex" "$f" || true)
		[ -n "$lines" ] || continue
		hits=1
		echo "vm: kernel problem in $(basename "$f"):" >&2
		# The first hit with what follows it (the trace), then the rest.
		local first
		first=$(head -1 <<<"$lines" | cut -d: -f1)
		sed -n "${first},$((first + 40))p" "$f" | sed 's/^/  | /' >&2
		sed -n '1,40s/^/  > /p' <<<"$lines" >&2
	done
	return $hits
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
run | shell) ;;
check-log)
	[ $# -ge 1 ] || usage
	check_log "$@"
	exit $?
	;;
*) usage ;;
esac

user=0
host_root=0
bench_disk=0
memory_checks=0
timeout=${VNPU_VM_TIMEOUT:-600}
module=""
firmware=""
adds=()
device=1
device_opts=""
smp=${VNPU_VM_SMP:-2}
mem=${VNPU_VM_MEM:-2G}
accel=${VNPU_VM_ACCEL:-auto}
qemu=${VNPU_QEMU:-}
while [ $# -gt 0 ]; do
	case $1 in
	--user) user=1; shift ;;
	--host-root) host_root=1; shift ;;
	--bench-disk) bench_disk=1; shift ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--module) module=${2:?}; shift 2 ;;
	--firmware) firmware=${2:?}; shift 2 ;;
	--add) adds+=(--add "${2:?}"); shift 2 ;;
	--device-opts) device_opts=${2:?}; shift 2 ;;
	--no-device) device=0; shift ;;
	--smp) smp=${2:?}; shift 2 ;;
	--memory-checks) memory_checks=1; shift ;;
	--mem) mem=${2:?}; shift 2 ;;
	--accel) accel=${2:?}; shift 2 ;;
	--qemu) qemu=${2:?}; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
if [ "$mode" = run ]; then
	[ $# -ge 1 ] || die "run: no command (scripts/vm.sh run -- COMMAND)"
	[[ $timeout =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] ||
		die "--timeout wants whole seconds"
else
	[ $# -eq 0 ] || usage
fi
case $accel in auto | tcg | kvm) ;; *) die "--accel auto|tcg|kvm" ;; esac

# With --quiet the helpers' progress is shown only when they fail.
quietly() {
	if [ "$quiet" -eq 0 ]; then
		"$@"
		return
	fi
	local errs rc=0
	errs=$(mktemp)
	"$@" 2>"$errs" || rc=$?
	[ $rc -eq 0 ] || cat "$errs" >&2
	rm -f "$errs"
	return $rc
}

# ---- ingredients ---------------------------------------------------------------
t_start=$(date +%s.%N)
if [ -z "$qemu" ]; then
	if ! qemu=$("$here/build-qemu.sh" --print-path 2>/dev/null); then
		log "building QEMU with the vnpu device (scripts/build-qemu.sh)"
		qemu=$(quietly "$here/build-qemu.sh")
	fi
fi
[ -x "$qemu" ] || die "no QEMU at $qemu"
# --host-root needs QEMU's virtfs (scripts/build-qemu.sh checks it is built).
if [ "$host_root" -eq 1 ] &&
	! "$qemu" -device help 2>/dev/null | grep -q '"virtio-9p-pci"'; then
	die "--host-root: $qemu was built without virtfs (virtio-9p);" \
		"rebuild it with scripts/build-qemu.sh"
fi
log "preparing the guest kernel"
guest=$(quietly "$here/guest-kernel.sh")
log "preparing the initramfs"
initramfs=$(quietly "$here/initramfs.sh" --guest "$guest" \
	${module:+--module "$module"} ${firmware:+--firmware "$firmware"} \
	"${adds[@]}")

# The uncompressed ELF kernel boots straight into its PVH entry point,
# skipping the real-mode setup and the decompressor (seconds under TCG).
kernel=$guest/vmlinux
[ -f "$kernel" ] && [ "${VNPU_VM_KERNEL:-}" != vmlinuz ] || kernel=$guest/vmlinuz

mkdir -p "$state/runs"
run=$(mktemp -d "$state/runs/$(date +%Y%m%d-%H%M%S).XXXX")
qpid=""
# Whatever the outcome, only the ten newest kept runs (failures) stay.
cleanup() {
	[ -z "$qpid" ] || kill -9 "$qpid" 2>/dev/null || true
	keep_newest 10 "$state/runs" '*' || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --host-root: what of the host the guest gets (docs/vm.md). Shares are
# "TAG HOST-PATH" lines in $1/shares (each a -virtfs export, mounted
# read-only, nosuid, nodev at the same path), top-level symlinks such as
# /bin -> usr/bin are "NAME TARGET" lines in $1/links, and $1/etc holds the
# few /etc files the dynamic linker and Python read. Nothing else of the
# host is exported: not /etc (shadow, ssh host keys), /root, /home, /var.
host_root_prepare() {
	local x=$1 d cwd f
	cwd=$(pwd -P)
	# The current directory is exported whole: never one that holds the
	# host's secrets or other users' files: not /, a system top-level
	# directory (/root, /home, /tmp, /var, ...; a checkout of its own such
	# as /src is fine), a home (/home/*, the user's own), a directory of
	# /var (/var/lib, /var/backups), a home's dot-directory (~/.ssh), nor
	# anything under /etc, /boot, /proc, /sys, /dev.
	if [ "$cwd" = / ] ||
		[[ $cwd =~ ^/(root|home|tmp|var|etc|boot|proc|sys|dev|run|usr|mnt|media|srv|lost\+found)$ ]] ||
		[[ $cwd =~ ^/(home|var)/[^/]+$ ]] ||
		[[ $cwd =~ ^/(root|home/[^/]+)/\. ]] ||
		[[ $cwd =~ ^/(etc|boot|proc|sys|dev)/ ]] ||
		[ "$cwd" = "$(cd ~ 2>/dev/null && pwd -P)" ] ||
		[[ $cwd == *$'\n'* ]]; then
		die "--host-root: will not share $cwd with the guest;" \
			"run it from the checkout"
	fi
	touch "$x/host-root"
	echo "$cwd" >"$x/cwd"
	: >"$x/shares"
	: >"$x/links"
	for d in usr bin sbin lib lib32 lib64 libx32; do
		if [ -L "/$d" ]; then
			echo "$d $(readlink "/$d")" >>"$x/links"
		elif [ -d "/$d" ]; then
			echo "vnpu.$d /$d" >>"$x/shares"
		fi
	done
	case $cwd/ in
	/usr/* | /bin/* | /sbin/* | /lib*/*) ;;
	*) echo "vnpu.cwd $cwd" >>"$x/shares" ;;
	esac
	# The linker's cache and configuration, the alternatives its links
	# go through (libblas.so.3 for PyTorch), Python's site configuration.
	mkdir -p "$x/etc"
	for f in ld.so.cache ld.so.conf ld.so.conf.d alternatives \
		python3 python3.*; do
		[ -e "/etc/$f" ] || continue
		cp -a "/etc/$f" "$x/etc/" || die "--host-root: cannot copy /etc/$f"
	done
}

# The per-run part of the initramfs: mode, command, user. The kernel unpacks
# concatenated archives in order, so it is simply appended.
mkdir -p "$run/extra/vnpu"
echo "$mode" >"$run/extra/vnpu/mode"
if [ "$mode" = run ]; then
	# Each argument single-quoted for sh, so it arrives unchanged.
	for arg in "$@"; do
		printf "'%s' " "${arg//\'/\'\\\'\'}"
	done >"$run/extra/vnpu/cmd"
	echo >>"$run/extra/vnpu/cmd"
	chmod 0644 "$run/extra/vnpu/cmd"
	[ "$user" -eq 0 ] || touch "$run/extra/vnpu/user"
fi
if [ "$host_root" -eq 1 ]; then
	host_root_prepare "$run/extra/vnpu"
fi
if [ "$bench_disk" -eq 1 ]; then
	touch "$run/extra/vnpu/bench-disk"
	head -c $((1 << 20)) /dev/zero >"$run/bench-disk.img"
fi
# An uncompressed archive must start 4-byte aligned; zeros between
# archives are skipped.
size=$(stat -c %s "$initramfs")
{
	cat "$initramfs"
	head -c $(((4 - size % 4) % 4)) /dev/zero
	(cd "$run/extra" && find vnpu | cpio --quiet -o -H newc -R 0:0)
} >"$run/initrd"

# ---- QEMU command line -----------------------------------------------------------
kvm_verdict=$state/kvm-$(uname -r)
# KVM needs VMX or SVM in the CPU (a /dev/kvm without them makes QEMU
# abort) and a /dev/kvm this user can open.
kvm_usable() {
	grep -qw -E 'vmx|svm' /proc/cpuinfo 2>/dev/null &&
		{ : <>/dev/kvm; } 2>/dev/null &&
		[ "$(cat "$kvm_verdict" 2>/dev/null)" != bad ]
}
if [ "$accel" = auto ]; then
	# KVM only where it has been seen to boot this guest; a first attempt
	# that fails is remembered and never retried on this host kernel.
	if kvm_usable && [ "$mode" = run ]; then accel=kvm-try; else accel=tcg; fi
fi

qemu_args() {
	local a=$1
	# dump-guest-core=off: a QEMU core holds QEMU, not the guest's RAM.
	local -a args=(-machine "q35,dump-guest-core=off" -m "$mem" -smp "$smp"
		-nodefaults
		-no-user-config -no-reboot -display none
		-kernel "$kernel" -initrd "$run/initrd")
	if [ "$a" = tcg ]; then
		args+=(-accel tcg -cpu max)
	else
		args+=(-accel kvm -cpu host)
	fi
	# loglevel=5: warnings reach the console (and so the console log) as
	# they happen, without the boot chatter of info messages.
	local append="console=ttyS0 loglevel=5 panic=-1 rdinit=/init"
	[ "$memory_checks" -eq 0 ] ||
		append+=" slub_debug=FZPU kfence.sample_interval=1"
	append+="${VNPU_VM_APPEND:+ $VNPU_VM_APPEND}"
	if [ "$mode" = run ]; then
		args+=(-serial "file:$run/console.log"
			-device "virtio-serial-pci,id=vser")
		local p
		for p in stdout stderr kmsg status; do
			args+=(-chardev "file,id=vnpu_$p,path=$run/$p"
				-device "virtserialport,bus=vser.0,chardev=vnpu_$p,name=vnpu.$p")
		done
	else
		args+=(-serial mon:stdio)
	fi
	[ "$device" -eq 0 ] || args+=(-device "vnpu${device_opts:+,$device_opts}")
	# --host-root's shares, read-only. security_model=none: files are
	# read with QEMU's own rights and the guest sees their owners and
	# modes as they are; multidevs=remap keeps inode numbers of the
	# host's several filesystems apart.
	if [ "$host_root" -eq 1 ]; then
		local tag path
		while read -r tag path; do
			# QEMU's option syntax doubles a comma in a value.
			args+=(-virtfs "local,path=${path//,/,,},mount_tag=$tag,security_model=none,readonly=on,multidevs=remap")
		done <"$run/extra/vnpu/shares"
	fi
	# virtio-blk as it is tuned for speed: an iothread of its own,
	# ioeventfd doorbells (on by default), the host's page cache serving
	# the reads (aio=threads, cache=writeback: a 1 MiB file stays cached).
	[ "$bench_disk" -eq 0 ] || args+=(
		-object "iothread,id=vnpu_blk_io"
		-drive "file=$run/bench-disk.img,if=none,id=vnpu_blk,format=raw,cache=writeback,aio=threads"
		-device "virtio-blk-pci,drive=vnpu_blk,iothread=vnpu_blk_io")
	args+=(-append "$append")
	printf '%s\0' "$qemu" "${args[@]}"
}

if [ "$mode" = shell ]; then
	log "booting ($accel, $smp vCPUs, $mem) -- Ctrl-A X quits"
	mapfile -d '' cmd < <(qemu_args tcg)
	exec "${cmd[@]}"
fi

# ---- run -------------------------------------------------------------------------
# Returns 0 when QEMU ended by itself, 1 on the time limit, 2 when KVM was
# being tried and did not boot.
boot_and_wait() {
	local a=$1 limit=$2
	local -a cmd
	local p
	mapfile -d '' cmd < <(qemu_args "${a%-try}")
	for p in stdout stderr kmsg status console.log; do : >"$run/$p"; done
	# In the run dir with core dumps on: a crash leaves its core there.
	(cd "$run" && ulimit -c unlimited 2>/dev/null
	exec "${cmd[@]}") </dev/null >"$run/qemu.log" 2>&1 &
	qpid=$!
	local deadline=$((SECONDS + limit)) booted=0
	if [ "$a" = kvm-try ]; then
		# Under KVM the guest is up in about a second; an emulation
		# failure pauses the VM (QEMU does not exit).
		local boot_deadline=$((SECONDS + 20))
		while kill -0 "$qpid" 2>/dev/null; do
			if grep -q booted "$run/status"; then booted=1; break; fi
			if grep -q 'KVM internal error' "$run/qemu.log" ||
				[ $SECONDS -ge $boot_deadline ]; then
				break
			fi
			sleep 0.1
		done
		if [ $booted -eq 0 ]; then
			kill -9 "$qpid" 2>/dev/null || true
			wait "$qpid" 2>/dev/null || true
			qpid=""
			return 2
		fi
	fi
	tail -c +1 -s 0.1 -f --pid="$qpid" "$run/stdout" &
	local t_out=$!
	tail -c +1 -s 0.1 -f --pid="$qpid" "$run/stderr" >&2 &
	local t_err=$!
	sleep $((deadline - SECONDS > 0 ? deadline - SECONDS : 0)) &
	local sleeper=$!
	wait -n "$qpid" "$sleeper" || true
	local rc=0
	if kill -0 "$qpid" 2>/dev/null; then
		rc=1
		kill "$qpid" 2>/dev/null || true
		sleep 1
		kill -9 "$qpid" 2>/dev/null || true
	fi
	kill "$sleeper" 2>/dev/null || true
	qemu_rc=0
	wait "$qpid" 2>/dev/null || qemu_rc=$?
	qpid=""
	wait "$t_out" "$t_err" 2>/dev/null || true
	return $rc
}

devdesc=", no vnpu device"
[ "$device" -eq 0 ] || devdesc=", -device vnpu${device_opts:+,$device_opts}"
log "booting ($accel, $smp vCPUs, $mem$devdesc)"
t_boot=$(date +%s.%N)
rc=0
boot_and_wait "$accel" "$timeout" || rc=$?
if [ $rc -eq 2 ]; then
	echo bad >"$kvm_verdict"
	log "KVM cannot run this guest here (remembered); using TCG"
	accel=tcg
	t_boot=$(date +%s.%N)
	rc=0
	boot_and_wait tcg "$timeout" || rc=$?
elif [ "$accel" = kvm-try ]; then
	echo good >"$kvm_verdict"
fi
t_end=$(date +%s.%N)
# What a kept run dir needs is the logs, not the image.
rm -rf "$run/initrd" "$run/extra"

# QEMU killed by a signal (other than our time limit's): a bug in QEMU or
# the device, whatever the guest reported. The backtrace comes from the
# core when gdb is there; otherwise the core stays with the logs.
qemu_crash_report() {
	local core
	echo "vm: QEMU died of signal $((qemu_rc - 128)) (logs: $run)" >&2
	sed 's/^/  qemu: /' "$run/qemu.log" | tail -10 >&2
	core=$(find "$run" -maxdepth 1 -type f -name 'core*' | head -1)
	if [ -z "$core" ]; then
		echo "vm: no core file in $run (core_pattern:" \
			"$(cat /proc/sys/kernel/core_pattern 2>/dev/null))" >&2
	elif command -v gdb >/dev/null; then
		gdb -batch -ex bt -ex 'thread apply all bt' "$qemu" "$core" \
			>"$run/qemu-backtrace.txt" 2>&1 || true
		echo "vm: backtrace of the crashing thread" \
			"($run/qemu-backtrace.txt has every thread):" >&2
		sed -n '/^#0 /,/^$/p' "$run/qemu-backtrace.txt" | head -30 |
			sed 's/^/  | /' >&2
		rm -f "$core"
	else
		echo "vm: core kept as $core (install gdb for a backtrace)" >&2
	fi
}

status=$(awk '$1 == "exit" {print $2}' "$run/status")
kernel_ok=0
check_log "$run/console.log" "$run/kmsg" || kernel_ok=1
if [ $rc -eq 1 ]; then
	echo "vm: time limit of ${timeout} s reached; QEMU killed (logs: $run)" >&2
	exit 124
fi
if [ "$qemu_rc" -gt 128 ]; then
	qemu_crash_report
	exit 125
fi
if [ -z "$status" ]; then
	echo "vm: the guest reported no exit status (QEMU exited" \
		"$qemu_rc; logs: $run); console:" >&2
	tail -30 "$run/console.log" | sed 's/^/  | /' >&2
	sed 's/^/  qemu: /' "$run/qemu.log" | tail -10 >&2
	exit 125
fi
if [ $kernel_ok -ne 0 ]; then
	echo "vm: the command exited $status but the guest kernel logged" \
		"the problems above; failing the run (logs: $run)" >&2
	exit 125
fi
log "$(awk -v a="$t_start" -v b="$t_boot" -v c="$t_end" \
	'BEGIN {printf "prepare %.1f s, boot+command+poweroff %.1f s", b - a, c - b}')"
if [ -n "${VNPU_VM_KEEP:-}" ]; then
	log "logs kept in $run"
else
	rm -rf "$run"
fi
exit "$status"
