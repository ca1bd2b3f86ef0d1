#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The package path, as a user gets the stack: builds the Debian packages
# (scripts/package.sh: dpkg-buildpackage and lintian), installs them with
# apt in a clean root of this machine's Debian release (scripts/clean-room.sh)
# where tests/package/in-root.sh checks DKMS, the -dev packages, vnpu-smi
# and torch_vnpu, then boots the VM on the module DKMS built there and the
# packaged firmware and runs the packaged workloads through it.
#
#   tests/package/run-package-test.sh [--results FILE] [-- VM.SH OPTIONS...]
#
# --results  also write one JSON line per check, {"name", "result"} with
#            result OK or FAIL (as meson's testlog.json)
# Options after -- go to scripts/vm.sh (e.g. --qemu).
#
# The root gets a clone of HEAD (clean-room.sh), and the packages are built
# from the checkout's files: in a clean clone the two are the same.
# Work files are in build-packages/. Exits non-zero when a check failed.
set -euo pipefail
caller_pwd=$PWD
cd "$(dirname "$0")/../.."

results=""
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=$(cd "$caller_pwd" && realpath -m -- "${2:?}"); shift 2 ;;
	--) shift; break ;;
	*)
		sed -n '10,14p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done
vm_opts=("$@")

work=build-packages
status=0
record() { # NAME OK|FAIL
	[ "$2" = OK ] || status=1
	echo "package/$1: $2"
	[ -z "$results" ] ||
		echo "{\"name\": \"package/$1\", \"result\": \"$2\"}" >>"$results"
}
[ -z "$results" ] || : >"$results"

if ! scripts/package.sh --out "$work/debs" >/dev/null; then
	record build FAIL
	exit 1
fi
record build OK

release=$(scripts/build-module.sh --print-release) ||
	{ record kernel-release FAIL; exit 1; }
rm -rf "${work:?}/root-results"
# One result for the run as a whole too: a check that never reported, or
# a root that could not be made, fails it.
root_verdict=OK
scripts/clean-room.sh --debs "$work/debs" --results "$work/root-results" \
	--command "tests/package/in-root.sh $release" || root_verdict=FAIL
record clean-root "$root_verdict"
[ -f "$work/root-results/checks" ] || exit 1
while read -r verdict name; do
	record "$name" "$([ "$verdict" = PASS ] && echo OK || echo FAIL)"
done <"$work/root-results/checks"

# The VM on what the packages installed: DKMS's vnpu.ko, vnpu-firmware's
# image, vnpu-tools' workloads, as the non-root user.
r=$work/root-results
if [ -f "$r/vnpu.ko" ] && [ -f "$r/vnpu.fw" ] && [ -f "$r/vnpu-workloads" ]; then
	verdict=OK
	scripts/vm.sh run "${vm_opts[@]}" --module "$r/vnpu.ko" \
		--firmware "$r/vnpu.fw" --user \
		--add "$r/vnpu-workloads:/opt/vnpu/bin/vnpu-workloads" \
		--add "$r/vnpu-dispatch-workloads:/opt/vnpu/bin/vnpu-dispatch-workloads" \
		-- sh -c 'export VNPU_BACKEND=drm; /opt/vnpu/bin/vnpu-workloads &&
			/opt/vnpu/bin/vnpu-dispatch-workloads' || verdict=FAIL
	record vm-workloads "$verdict"
else
	record vm-workloads FAIL
fi
exit $status
