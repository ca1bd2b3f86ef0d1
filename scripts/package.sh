#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (debian/) with dpkg-buildpackage -us -uc -b and
# checks them with lintian, whose errors and warnings fail the build (none is
# overridden), and the torch_vnpu wheel. Prints the directory holding the
# .debs and the wheel on stdout; progress goes to stderr.
#
#   scripts/package.sh [--out DIR]
#
# --out  where the .debs, .changes, .buildinfo and the wheel go (default
#        build-packages)
#
# python3-torch-vnpu is built for Debian's python3-torch when apt's
# candidate of it is a PyTorch torch_vnpu supports (2.6 to 2.14, Debian 13);
# elsewhere (Debian 12's 1.13) the build profile pkg.vnpu.notorch leaves it
# out. The wheel, torch_vnpu-<version>-<tags>.whl, is always built: from a
# meson build for the Python scripts/torch-env.sh prints, pinned to that
# Python's torch (torch_vnpu/packaging/make_wheel.py), and checked: it
# installs with pip into a fresh virtual environment with that torch and
# computes there on the simulator, against the .deb's libvnpudispatch.
#
# The build runs in a copy of the checkout's files as they are (tracked and
# new, not ignored) under $VNPU_CACHE/package, so nothing is written into
# the checkout and no earlier build of it is reused. VNPU_JOBS: the wheel
# build's parallel jobs (default 2).
set -euo pipefail
caller_pwd=$PWD
cd "$(dirname "$0")/.."
repo=$PWD

out=$repo/build-packages
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$(cd "$caller_pwd" && realpath -m -- "${2:?}"); shift 2 ;;
	*)
		sed -n '8,11p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done

# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh
log() { echo "package: $*" >&2; }
die() { log "$*"; exit 1; }

scripts/deps.sh >&2

# Debian's PyTorch, by the version apt would install: python3-torch-vnpu
# only when torch_vnpu supports it.
deb_torch=$(apt-cache policy python3-torch 2>/dev/null |
	sed -n 's/^ *Candidate: //p')
profiles=()
if [ -n "$deb_torch" ] && [ "$deb_torch" != "(none)" ] &&
	dpkg --compare-versions "$deb_torch" ge 2.6~ &&
	dpkg --compare-versions "$deb_torch" lt 2.15~; then
	log "python3-torch-vnpu for Debian's python3-torch $deb_torch"
else
	profiles=(-Ppkg.vnpu.notorch)
	log "Debian's python3-torch is ${deb_torch:-missing}, not 2.6 to 2.14:" \
		"no python3-torch-vnpu (profile pkg.vnpu.notorch); the wheel only"
fi
dpkg-checkbuilddeps "${profiles[@]}" >&2 ||
	die "build dependencies missing (debian/control)"

version=$(dpkg-parsechangelog -S Version)
work=$cache/package
src=$work/vnpu-$version
rm -rf --one-file-system "$work"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$src"

log "building vnpu $version (log: $work/build.log)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b "${profiles[@]}") \
	>"$work/build.log" 2>&1; then
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

# ---- the wheel ----------------------------------------------------------------
# torch_vnpu alone (the _C extension and the .py files), for the torch of
# scripts/torch-env.sh's Python, which it is pinned to.
py=$(scripts/torch-env.sh)
pyver=$(meson introspect --projectinfo "$src/meson.build" 2>/dev/null |
	"$py" -c 'import json, sys; print(json.load(sys.stdin)["version"])') ||
	pyver=$(echo "$version" | sed 's/-[^-]*$//; s/^[0-9]*://')
wb=$work/wheel-build
log "the torch_vnpu wheel for $py (log: $work/wheel.log)"
if ! {
	meson setup "$wb" "$src" --prefix=/usr -Dbuildtype=release \
		-Dtorch=enabled -Dpython="$py" -Dpython.bytecompile=-1 \
		-Dtests=disabled -Dbench=disabled -Dfuzz=disabled &&
		ninja -C "$wb" -j "${VNPU_JOBS:-2}" "torch_vnpu/_C$("$py" \
			-c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" &&
		meson install -C "$wb" --no-rebuild --tags python-runtime \
			--destdir "$wb/stage"
} >"$work/wheel.log" 2>&1; then
	tail -40 "$work/wheel.log" >&2
	die "the wheel's build failed (log: $work/wheel.log)"
fi
# meson installs the .py files (tag python-runtime); the extension, whose
# tag (runtime) would install the whole tree, comes from the build tree.
pkgdir=$(find "$wb/stage" -type d -name torch_vnpu -path '*-packages/*' | head -1)
[ -n "$pkgdir" ] || die "meson installed no torch_vnpu"
cp "$wb"/torch_vnpu/_C.*.so "$pkgdir/"
rm -rf "$work/wheel"
wheel=$("$py" torch_vnpu/packaging/make_wheel.py --pkgdir "$pkgdir" \
	--version "$pyver" --out "$work/wheel") || die "make_wheel.py failed"
log "wheel: $(basename "$wheel")"

# The check: pip installs it into a fresh environment with its torch, and
# it computes there on the simulator with the packaged libvnpudispatch.so.0.
# A venv Python (Debian 12's .venv) gets a new venv and pip's torch at the
# pin; Debian's own Python one that sees Debian's python3-torch.
check=$PWD/torch_vnpu/packaging/check_wheel.py
torch_pin=$("$py" "$check" pin "$wheel") && [ -n "$torch_pin" ] ||
	die "the wheel names no torch==VERSION"
venv=$work/wheel-venv
rm -rf "$venv" "$work/libs"
dpkg-deb -x "$(ls "$work"/libvnpudispatch0_*.deb)" "$work/libs" &&
	dpkg-deb -x "$(ls "$work"/libvnpurt0_*.deb)" "$work/libs" ||
	die "cannot unpack libvnpudispatch0"
libdir=$(dirname "$(find "$work/libs" -name 'libvnpudispatch.so.0' | head -1)")
if "$py" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
	"$py" -m venv "$venv" || die "cannot make a venv"
	pip_args=(-c torch_vnpu/requirements.txt "torch==$torch_pin")
else
	"$py" -m venv --system-site-packages "$venv" || die "cannot make a venv"
	pip_args=()
fi
log "checking the wheel: pip install ${pip_args[*]} $(basename "$wheel")"
if ! "$venv/bin/pip" install -q --no-input --only-binary=:all: \
	"${pip_args[@]}" "$wheel" >&2; then
	die "the wheel does not install"
fi
if ! (cd "$work" && VNPU_BACKEND=sim LD_LIBRARY_PATH=$libdir \
	"$venv/bin/python" "$check" computes "$venv") >&2; then
	die "the installed wheel does not import or compute"
fi

# Earlier builds of these packages go; nothing else in DIR is touched.
mkdir -p "$out"
for p in $(dh_listpackages) vnpu; do
	rm -f "$out/${p}"_*.deb "$out/${p}"-dbgsym_*.deb \
		"$out/${p}"_*.changes "$out/${p}"_*.buildinfo
done
rm -f "$out"/torch_vnpu-*.whl
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$wheel" "$out/"
log "$(find "$out" -name '*.deb' ! -name '*-dbgsym_*' | wc -l) packages" \
	"and $(basename "$wheel") in $out"
echo "$out"
