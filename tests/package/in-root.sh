#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packages as a user installs them, in a clean Debian root of this
# machine's release (tests/package/run-package-test.sh runs this through
# scripts/clean-room.sh --debs, as the root's ordinary user with sudo):
#
#   tests/package/in-root.sh RELEASE
#
#  - apt installs ~/debs/*.deb, then the headers of kernel RELEASE (6.12:
#    from bookworm-backports on Debian 12, the release itself on 13):
#    vnpu-dkms's kernel hook has DKMS build and install vnpu.ko for it, as
#    it would for a user;
#  - the headers of another kernel series (Debian 12's own 6.1; on Debian
#    13, whose own kernel is 6.12, its backports' newer one) install without
#    error while the hook says it skipped that kernel, DKMS leaves it alone
#    and says why, and kbuild refuses it with the Kbuild's message;
#  - the tree's runtime examples and dispatcher workloads are built out of
#    tree with pkg-config alone against the installed -dev packages, and
#    run on the simulator; every installed header compiles on its own;
#  - the installed vnpu-smi runs, and torch_vnpu imports and computes:
#    python3-torch-vnpu where it was built (Debian 13), else the wheel in
#    ~/debs installed with pip, with the torch it pins, in a venv.
#
# Prints "PASS name" or "FAIL name" per check, also into results/checks, and
# leaves in results/ the DKMS-built vnpu.ko, the packaged firmware and the
# packaged workloads for the VM. Exits 1 when a check failed.
set -uo pipefail
release=${1:?usage: in-root.sh RELEASE}
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

# dkms and modinfo are in sbin, which a login shell's PATH lacks for a user
export PATH=$PATH:/usr/sbin:/sbin
mkdir -p results
checks=$PWD/results/checks
: >"$checks"
failed=0
check() { # NAME COMMAND...: runs COMMAND, its output to the log
	local name=$1 verdict=PASS
	shift
	echo "== $name"
	"$@" || { verdict=FAIL; failed=1; }
	echo "$verdict $name" | tee -a "$checks"
}

mapfile -t debs < <(find ~/debs -name '*.deb' ! -name '*-dbgsym_*' | sort)
# With what a developer adds to build programs against the -dev packages.
install_debs() {
	apt_get update -qq &&
		apt_get install -y -qq --no-install-recommends "${debs[@]}" \
			build-essential pkgconf
}
check install install_debs

# DKMS from the kernel hook, for the kernel the VM boots. DKMS compresses
# the module as the kernel's own are (xz for Debian's).
dkms_builds_for_release() {
	local ko
	ensure_apt_sources &&
		apt_get install -y -qq --no-install-recommends \
			"${apt_from[@]}" "linux-headers-$release" || return 1
	dkms status -m vnpu -k "$release"
	dkms status -m vnpu -k "$release" | grep -q ': installed' || return 1
	ko=$(find "/lib/modules/$release/updates/dkms" -name 'vnpu.ko*' | head -1)
	[ -n "$ko" ] && modinfo -F vermagic "$ko" | grep -q "^$release " ||
		return 1
	case $ko in
	*.xz) xz -dc "$ko" >results/vnpu.ko ;;
	*.zst) zstd -dcq "$ko" >results/vnpu.ko ;;
	*) cp "$ko" results/vnpu.ko ;;
	esac
}
check dkms-build dkms_builds_for_release

# Another kernel series: DKMS skips it, and kbuild stops at the source's
# check. The release's own linux-headers-amd64 when that is not 6.12
# (Debian 12's 6.1), else its backports' (Debian 13's is 6.12 itself).
# Prints the headers' series (6.1, 7.3, ...) of linux-headers-amd64's
# candidate under the apt options given.
headers_series() {
	apt-cache "$@" depends linux-headers-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-headers-\([0-9]*\.[0-9]*\)\..*/\1/p' |
		head -1
}
other_kernel_refused() {
	local old log series from=()
	series=$(headers_series)
	if [ "$series" = 6.12 ]; then
		VNPU_APT_EXTRA="deb $codename-backports" ensure_apt_sources ||
			return 1
		from=(-t "$codename-backports")
		series=$(headers_series "${from[@]}")
	fi
	echo "other kernel series: ${series:-none}"
	case $series in "" | 6.12) return 1 ;; esac
	log=$(apt_get install -y -qq --no-install-recommends "${from[@]}" \
		linux-headers-amd64 2>&1) || { echo "$log"; return 1; }
	echo "$log" | grep 'dkms-vnpu'
	grep -q "dkms-vnpu: vnpu is built for Linux 6.12 only; skipped ${series//./\\.}\\." \
		<<<"$log" || return 1
	old=$(find /usr/src -maxdepth 1 -name "linux-headers-$series.*-amd64" \
		-printf '%f\n' | sed 's/^linux-headers-//' | sort -V | tail -1)
	[ -n "$old" ] || { echo "no $series headers"; return 1; }
	echo "other kernel: $old"
	if dkms status -m vnpu -k "$old" | grep -q ': installed'; then
		echo "DKMS installed vnpu for $old"
		return 1
	fi
	log=$(sudo dkms build -m vnpu -v "$(dpkg-query -W -f='${Version}' \
		vnpu-dkms)" -k "$old" 2>&1)
	echo "$log"
	grep -q 'BUILD_EXCLUSIVE' <<<"$log" || return 1
	rm -rf /tmp/vnpu-src && cp -r /usr/src/vnpu-* /tmp/vnpu-src &&
		log=$(make -C "/lib/modules/$old/build" M=/tmp/vnpu-src modules 2>&1)
	echo "$log" | tail -5
	grep -q "vnpu is written for Linux 6.12, not ${series//./\\.}\\." <<<"$log"
}
check dkms-refuses-other-kernel other_kernel_refused

check firmware cp /lib/firmware/vnpu/vnpu.fw results/vnpu.fw
check workloads-installed cp /usr/libexec/vnpu/vnpu-workloads \
	/usr/libexec/vnpu/vnpu-dispatch-workloads results/

# Out of tree, with pkg-config alone.
export VNPU_BACKEND=sim
headers_alone() {
	local h rc=0
	for h in /usr/include/vnpu/*.h /usr/include/drm/vnpu_accel.h; do
		# shellcheck disable=SC2046 # pkg-config's words on purpose
		printf '#include <%s>\n' "${h#/usr/include/}" |
			cc -std=c11 -Wall -Werror -fsyntax-only -x c - \
				$(pkg-config --cflags vnpudispatch) ||
			{ echo "$h does not compile on its own"; rc=1; }
	done
	return $rc
}
check headers-self-contained headers_alone
build_and_run() { # SOURCE PKG
	local out
	out=/tmp/$(basename "$1" .c)
	# shellcheck disable=SC2046
	cc -O2 -Wall "$1" $(pkg-config --cflags --libs "$2") -lm \
		-o "$out" && "$out"
}
for ex in userspace-runtime/examples/ex_*.c; do
	check "oot-$(basename "$ex" .c)" build_and_run "$ex" vnpurt
done
check oot-dispatch-workloads build_and_run workloads/dispatch_workloads.c \
	vnpudispatch

check vnpu-smi vnpu-smi --backend sim

# torch_vnpu as the platform ships it: python3-torch-vnpu for Debian's
# python3-torch where it was built (Debian 13), else the wheel
# (~/debs/torch_vnpu-*.whl) in a venv made here with Debian's python3-venv
# and pip, which installs the torch the wheel pins from this machine's pip
# settings (clean-room.sh brings them in, their local directories read-only).
torch_py=/usr/bin/python3
torch_prefix=/usr/lib/python3/dist-packages/
wheel=$(find ~/debs -name 'torch_vnpu-*.whl' | head -1)
pip_settings() {
	local v d rc=0
	compgen -e | grep '^PIP_' || echo "no PIP_* variables"
	for v in ${PIP_FIND_LINKS:-}; do
		d=${v#file://}
		case $d in /*) ;; *) continue ;; esac
		if [ ! -d "$d" ]; then
			echo "$d (PIP_FIND_LINKS) is not here"; rc=1
		elif touch "$d/.vnpu-write-test" 2>/dev/null ||
			sudo touch "$d/.vnpu-write-test" 2>/dev/null; then
			rm -f "$d/.vnpu-write-test"; sudo rm -f "$d/.vnpu-write-test"
			echo "$d is writable"; rc=1
		else
			echo "$d: $(find "$d" -maxdepth 1 -name '*.whl' | wc -l) wheels, read-only"
		fi
	done
	return $rc
}
torch_wheel_venv() {
	local pin venv=$HOME/torch-venv
	pin=$(python3 torch_vnpu/packaging/check_wheel.py pin "$wheel") &&
		[ -n "$pin" ] || return 1
	echo "pip install torch==$pin $(basename "$wheel")"
	python3 -m venv "$venv" &&
		"$venv/bin/pip" install -q --no-input --only-binary=:all: \
			-c torch_vnpu/requirements.txt "torch==$pin" "$wheel"
}
if ! dpkg-query -W python3-torch-vnpu >/dev/null 2>&1; then
	if [ -z "$wheel" ]; then
		check torch-vnpu-wheel false
	else
		check pip-settings pip_settings
		check torch-vnpu-wheel eval 'apt_get install -y -qq \
			--no-install-recommends python3-venv && torch_wheel_venv'
		torch_py=$HOME/torch-venv/bin/python
		torch_prefix=$HOME/torch-venv/
	fi
fi
# From outside the checkout, so that only the installed package can answer.
check_wheel=$PWD/torch_vnpu/packaging/check_wheel.py
torch_computes() (
	cd /tmp && "$torch_py" "$check_wheel" computes "$torch_prefix"
)
check torch-vnpu torch_computes
exit $failed
