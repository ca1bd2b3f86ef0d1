#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One test of scripts/vm.sh per invocation (meson's 'vm' suite):
#   vm_test.sh CASE
# VNPU_VM_SH is scripts/vm.sh, VNPU_VM_LOGS the canned kernel logs, VNPU_QEMU
# our QEMU. Prints what it checks; exits 0 on success, 1 on failure.
#
# Every case starts from the state of a machine that never ran the VM: an
# empty VNPU_VM_STATE (no kept runs, no KVM verdict). Whatever an earlier
# run left behind must not be what makes a case pass.
set -uo pipefail

vm=${VNPU_VM_SH:?}
logs=${VNPU_VM_LOGS:?}
fails=0
work=$(mktemp -d "${TMPDIR:-/tmp}/vnpu-vm-test.XXXXXX")
export VNPU_VM_STATE=$work/state
# A failing case's kept runs go where vm.sh keeps runs by default, so that
# its logs outlive the test (the ten newest stay there).
finish() {
	local kept=${VNPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vnpu}/vm/runs
	if [ "$fails" -ne 0 ] && [ -d "$VNPU_VM_STATE/runs" ] &&
		[ -n "$(ls -A "$VNPU_VM_STATE/runs")" ]; then
		mkdir -p "$kept"
		mv "$VNPU_VM_STATE"/runs/* "$kept"/ &&
			echo "kept the failed runs' logs in $kept"
	fi
	rm -rf "$work"
}
trap finish EXIT

ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
# expect_rc WANT DESCRIPTION -- vm.sh arguments...: runs vm.sh, keeps its
# stdout and stderr in $work/out and $work/err.
expect_rc() {
	local want=$1 what=$2
	shift 3
	"$vm" "$@" >"$work/out" 2>"$work/err"
	local rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "$what: exit $rc"
	else
		fail "$what: exit $rc, want $want"
		sed 's/^/  stderr: /' "$work/err" | tail -40
	fi
}

case ${1:-} in
log-scanner)
	"$vm" check-log "$logs/clean.log" 2>"$work/err" &&
		ok "clean log passes" || fail "clean log rejected: $(cat "$work/err")"
	for bad in warn oops lockup; do
		if "$vm" check-log "$logs/clean.log" "$logs/$bad.log" \
			2>"$work/err"; then
			fail "$bad.log not caught"
		else
			ok "$bad.log caught"
		fi
	done
	# The offending lines are shown.
	"$vm" check-log "$logs/warn.log" 2>"$work/err"
	grep -q 'WARNING: CPU: 1 PID: 212 at drivers/accel/vnpu' "$work/err" &&
		grep -q 'Call Trace:' "$work/err" && ok "warn lines printed" ||
		fail "warn lines not printed: $(cat "$work/err")"
	;;
exit-status)
	expect_rc 0 "true" -- run --quiet -- true
	expect_rc 1 "false" -- run --quiet -- false
	expect_rc 42 "exit 42" -- run --quiet -- sh -c 'exit 42'
	expect_rc 127 "missing command" -- run --quiet -- no-such-command
	;;
output)
	# 100 KiB of random bytes (every byte value, no trailing newline)
	# through stdout must come back byte-exact, stderr separately, and
	# arguments with spaces, quotes and $ must arrive unchanged.
	head -c 102400 /dev/urandom >"$work/blob"
	expect_rc 0 "cat 100 KiB" -- run --quiet --add "$work/blob:/data/blob" \
		-- cat /data/blob
	if cmp -s "$work/blob" "$work/out"; then
		ok "100 KiB byte-exact ($(sha256sum <"$work/out" | cut -c1-16))"
	else
		fail "100 KiB differs: $(wc -c <"$work/out") bytes back"
	fi
	expect_rc 3 "args and stderr" -- run --quiet -- sh -c \
		'printf "[%s]" "$@"; echo to-stderr >&2; exit 3' sh \
		'a b' "it's" '$HOME' '' '"q"'
	want="[a b][it's][\$HOME][][\"q\"]"
	[ "$(cat "$work/out")" = "$want" ] && ok "arguments unchanged" ||
		fail "arguments: got '$(cat "$work/out")', want '$want'"
	grep -qx to-stderr "$work/err" && ! grep -q to-stderr "$work/out" &&
		ok "stderr apart from stdout" || fail "stderr: $(cat "$work/err")"
	;;
user-and-device)
	expect_rc 0 "--user id" -- run --quiet --user -- id
	grep -q 'uid=1000(vnpu)' "$work/out" && grep -q '990(accel)' "$work/out" &&
		ok "runs as vnpu in group accel: $(cat "$work/out")" ||
		fail "id: $(cat "$work/out")"
	expect_rc 0 "root id" -- run --quiet -- id -u
	[ "$(cat "$work/out")" = 0 ] && ok "runs as root" || fail "id -u: $(cat "$work/out")"
	expect_rc 0 "pci scan" -- run --quiet --device-opts cores=2,test-mode=on \
		-- sh -c 'for d in /sys/bus/pci/devices/*; do
			echo "$(cat $d/vendor):$(cat $d/device)"; done'
	grep -qx '0x1af4:0x10f7' "$work/out" && ok "vnpu device 1af4:10f7 present" ||
		fail "no 1af4:10f7 in: $(tr '\n' ' ' <"$work/out")"
	expect_rc 0 "no device" -- run --quiet --no-device \
		-- sh -c 'cat /sys/bus/pci/devices/*/device'
	! grep -qx 0x10f7 "$work/out" && ok "--no-device has no vnpu" ||
		fail "--no-device still has the device"
	;;
host-root)
	# --host-root: the host's /usr and the directory vm.sh ran in,
	# read-only, the command chrooted in them from that directory, as uid
	# 1000 in group 990 (accel) with writable /tmp and HOME. A file made
	# here must arrive unchanged: in the build dir (VNPU_VM_TEST_DIR),
	# since the guest's /tmp is its own, below a directory private to its
	# owner (as /root is), whose other files the guest must not see.
	top=$(mktemp -d "${VNPU_VM_TEST_DIR:?}/host-root.XXXXXX") || exit 1
	trap 'rm -rf "$top"; finish' EXIT
	dir=$top/private/inner
	mkdir -p "$dir"
	echo secret >"$top/private/secret"
	chmod 0700 "$top/private"
	chmod 0755 "$top" "$dir"
	head -c 4096 /dev/urandom >"$dir/blob"
	want=$(sha256sum <"$dir/blob" | cut -c1-64)
	cd "$dir" || exit 1
	expect_rc 0 "--host-root --user" -- run --quiet --host-root --user \
		-- sh -c 'id -u; id -G; pwd; sha256sum <blob | cut -c1-64
			touch /usr/vnpu-ro blob2 2>/dev/null && echo writable-root
			test -e ../secret && echo sees-the-private-dir
			mktemp >/dev/null && touch "$HOME/x" && echo tmp-and-home-ok
			test -c /dev/null && test -r /proc/self/status &&
				test -d /sys/class && echo dev-proc-sys-ok'
	got=$(tr '\n' '|' <"$work/out")
	[ "$got" = "1000|1000 990|$dir|$want|tmp-and-home-ok|dev-proc-sys-ok|" ] &&
		ok "shares read-only, uid 1000 in 990, cwd, /tmp, HOME, /dev" ||
		fail "got '$got'"
	expect_rc 0 "--host-root as root" -- run --quiet --host-root -- id -u
	[ "$(cat "$work/out")" = 0 ] && ok "--host-root without --user is root" ||
		fail "root: $(cat "$work/out" "$work/err")"
	;;
host-root-secrets)
	# What --host-root shows the guest's root: not the host's /etc
	# (shadow, gshadow), nor /root; every 9p share mounted ro, nosuid,
	# nodev; a setuid program of the host gives the guest user nothing;
	# and the host's Python (with PyTorch when the host has it) still runs.
	top=$(mktemp -d "${VNPU_VM_TEST_DIR:?}/host-root-secrets.XXXXXX") ||
		exit 1
	trap 'rm -rf "$top"; finish' EXIT
	chmod 0755 "$top"
	cd "$top" || exit 1
	# Names in the host's /root (the usual ones when it is unreadable),
	# but not the one leading to this directory, whose path the guest
	# does recreate.
	mapfile -t names < <({ ls -A /root 2>/dev/null
		printf '%s\n' .ssh .bashrc .profile; } | sort -u)
	case $top/ in /root/*/*)
		lead=${top#/root/}
		lead=${lead%%/*}
		mapfile -t names < <(printf '%s\n' "${names[@]}" | grep -vxF "$lead")
		;;
	esac
	py='import sys; print("python", sys.version_info[0])'
	if /usr/bin/python3 -c 'import importlib.util as u, sys
sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
		py='import torch; print("python", 3 if int((torch.ones(2) * 2).sum()) == 4 else 0)'
	fi
	expect_rc 0 "--host-root as root" -- run --quiet --host-root --timeout 480 \
		-- sh -c 'py=$1; shift
			for f in /etc/shadow /etc/gshadow /etc/ssh; do
				test -e "$f" && echo "visible: $f"
			done
			for n in "$@"; do
				test -e "/root/$n" || test -L "/root/$n" &&
					echo "visible: /root/$n"
			done
			awk "\$3 == \"9p\" {print \$2, \$4}" /proc/mounts >/tmp/9p
			test -s /tmp/9p || echo "no 9p mounts"
			while read -r mp opts; do
				for o in ro nosuid nodev; do
					case ,$opts, in *,$o,*) ;;
					*) echo "9p $mp without $o" ;; esac
				done
				for f in etc/shadow shadow root/.ssh; do
					test -e "$mp/$f" && echo "visible: $mp/$f"
				done
			done </tmp/9p
			/usr/bin/python3 -c "$py"' sh "$py" "${names[@]}"
	got=$(tr '\n' '|' <"$work/out")
	[ "$got" = "python 3|" ] &&
		ok "no host secrets, shares ro,nosuid,nodev, python runs" ||
		fail "guest root saw: '$got'"
	# Run from / or a home, vm.sh would export all of it: it refuses.
	for d in / "$HOME"; do
		(cd "$d" && "$vm" run --quiet --host-root -- true) 2>"$work/err"
		rc=$?
		[ "$rc" = 2 ] && grep -q "will not share" "$work/err" &&
			ok "refuses to share $d" ||
			fail "from $d: exit $rc, $(cat "$work/err")"
	done
	# A setuid program on a share: its owner's rights must not come
	# with it (visible when that owner is not uid 1000).
	if [ "$(id -u)" != 1000 ] && cp /usr/bin/id "$top/suid-id" &&
		chmod 4755 "$top/suid-id"; then
		expect_rc 0 "setuid program as --user" -- run --quiet --host-root \
			--user -- ./suid-id -u
		[ "$(cat "$work/out")" = 1000 ] &&
			ok "setuid bit ignored (nosuid)" ||
			fail "setuid program ran as uid $(cat "$work/out")"
	fi
	;;
time-limit)
	start=$(date +%s)
	expect_rc 124 "sleep past the limit" -- run --quiet --timeout 20 \
		-- sleep 1000
	grep -q 'time limit of 20 s' "$work/err" && ok "says so" ||
		fail "no time-limit message: $(cat "$work/err")"
	# The limit, not the command, ended the run: it returned before the
	# command could have finished (however slow the boot was).
	[ $(($(date +%s) - start)) -lt 1000 ] && ok "returned" ||
		fail "took $(($(date +%s) - start)) s, as long as the command"
	;;
kept-runs)
	# A failed run keeps its logs; only the ten newest are kept, and a
	# successful run adds none. Twelve old ones to start with.
	for i in $(seq 1 12); do
		mkdir -p "$VNPU_VM_STATE/runs/old-$i"
		touch -d "-$((i + 60)) min" "$VNPU_VM_STATE/runs/old-$i"
	done
	expect_rc 0 "true" -- run --quiet -- true
	kept=$(find "$VNPU_VM_STATE/runs" -mindepth 1 -maxdepth 1 | sort |
		xargs -r -n1 basename | tr '\n' ' ')
	want="old-1 old-10 old-2 old-3 old-4 old-5 old-6 old-7 old-8 old-9 "
	[ "$kept" = "$want" ] && ok "the ten newest kept runs remain" ||
		fail "kept runs: '$kept', want '$want'"
	;;
kernel-warn)
	# sysrq 'l' prints a backtrace of every CPU ("Call Trace:") into the
	# kernel log without harming the guest: the command succeeds, the
	# run must not, and its logs are kept.
	expect_rc 125 "backtrace in the kernel log" -- run --quiet \
		-- sh -c 'echo l >/proc/sysrq-trigger; echo done'
	grep -q 'Call Trace:' "$work/err" && ok "trace printed" ||
		fail "trace not printed"
	[ "$(cat "$work/out")" = "done" ] && ok "command output still shown" ||
		fail "output: $(cat "$work/out")"
	kept=("$VNPU_VM_STATE"/runs/*/console.log)
	[ ${#kept[@]} -eq 1 ] && [ -f "${kept[0]}" ] &&
		grep -q 'Call Trace:' "${kept[0]}" &&
		ok "the failed run's console log is kept" ||
		fail "kept: ${kept[*]}"
	;;
qemu-crash)
	# A QEMU killed by a signal fails the run (125) and says so, whatever
	# it did before: a stand-in that crashes at once.
	printf '#!/bin/sh\nkill -SEGV $$\n' >"$work/crashing-qemu"
	chmod +x "$work/crashing-qemu"
	expect_rc 125 "QEMU crash" -- run --quiet --accel tcg \
		--qemu "$work/crashing-qemu" -- true
	grep -q 'QEMU died of signal 11' "$work/err" && ok "names the signal" ||
		fail "no signal message: $(cat "$work/err")"
	;;
kernel-panic)
	expect_rc 125 "panic" -- run --quiet --timeout 300 \
		-- sh -c 'echo c >/proc/sysrq-trigger'
	grep -q 'Kernel panic' "$work/err" && ok "panic printed" ||
		fail "panic not printed"
	;;
*)
	echo "usage: $0 log-scanner|exit-status|output|user-and-device|host-root|host-root-secrets|kept-runs|time-limit|kernel-warn|kernel-panic|qemu-crash" >&2
	exit 2
	;;
esac
[ "$fails" -eq 0 ]
