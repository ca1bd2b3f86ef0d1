#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (debian/) with dpkg-buildpackage -us -uc -b and
# checks them with lintian, whose errors and warnings fail the build (none is
# overridden). Prints the directory holding the .debs on stdout; progress
# goes to stderr.
#
#   scripts/package.sh [--out DIR]
#
# --out  where the .debs, .changes and .buildinfo go (default build-packages)
#
# The build runs in a copy of the checkout's files as they are (tracked and
# new, not ignored) under $VNPU_CACHE/package, so nothing is written into
# the checkout and no earlier build of it is reused.
set -euo pipefail
caller_pwd=$PWD
cd "$(dirname "$0")/.."
repo=$PWD

out=$repo/build-packages
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$(cd "$caller_pwd" && realpath -m -- "${2:?}"); shift 2 ;;
	*)
		sed -n '8,10p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done

# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh
log() { echo "package: $*" >&2; }
die() { log "$*"; exit 1; }

scripts/deps.sh >&2
dpkg-checkbuilddeps >&2 || die "build dependencies missing (debian/control)"

version=$(dpkg-parsechangelog -S Version)
work=$cache/package
src=$work/vnpu-$version
rm -rf --one-file-system "$work"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$src"

log "building vnpu $version (log: $work/build.log)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -40 "$work/build.log" >&2
	die "dpkg-buildpackage failed (log: $work/build.log)"
fi

changes=$work/vnpu_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
log "lintian"
# --fail-on: what lintian reports at these levels fails the build; the
# pedantic and informational tags are printed for the log only.
if ! lintian --fail-on error,warning --info --pedantic "$changes" >&2; then
	die "lintian found errors or warnings"
fi

# Earlier builds of these packages go; nothing else in DIR is touched.
mkdir -p "$out"
for p in $(dh_listpackages) vnpu; do
	rm -f "$out/${p}"_*.deb "$out/${p}"-dbgsym_*.deb \
		"$out/${p}"_*.changes "$out/${p}"_*.buildinfo
done
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
log "$(find "$out" -name '*.deb' ! -name '*-dbgsym_*' | wc -l) packages in $out"
echo "$out"
