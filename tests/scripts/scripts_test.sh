#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tests of the scripts' own logic that need no VM (meson suite 'scripts'):
#   scripts_test.sh CASE
# VNPU_TOP is the checkout. Prints what it checks; exits 0 on success.
set -uo pipefail

top=${VNPU_TOP:?}
fails=0
work=$(mktemp -d "${TMPDIR:-/tmp}/vnpu-scripts-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# apt_sources / vnpu_apt_list_text against a sources dir of our making, on
# a release of our choosing (bookworm unless CODENAME is given).
apt_text() { # SOURCES-DIR [CODENAME]
	printf 'ID=debian\nVERSION_CODENAME=%s\n' "${2:-bookworm}" \
		>"$work/os-release"
	VNPU_APT_SOURCES_DIR=$1 VNPU_OS_RELEASE=$work/os-release \
		bash -c '. "$0/scripts/lib/apt.sh" && vnpu_apt_list_text' "$top"
}

case ${1:-} in
apt-sources)
	# deb822, the layout of a Debian 12 install: our file takes its
	# archive and keyring and adds the three entries it lacks.
	d=$work/a
	mkdir -p "$d/sources.list.d"
	cat >"$d/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: file:/srv/archive/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: file:/srv/security/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	text=$(apt_text "$d")
	[ "$(grep -c '^URIs: file:/srv/archive/debian$' <<<"$text")" = 3 ] &&
		ok "deb822: the machine's archive, three entries" ||
		fail "deb822: got: $text"
	grep -q '^Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg$' \
		<<<"$text" && ok "deb822: its keyring" || fail "keyring: $text"
	grep -q security <<<"$text" && fail "security archive used: $text" ||
		ok "not the security archive"

	# One-line sources with options; an entry disabled in deb822 does not
	# count, an enabled one does; an inline key block is skipped.
	d=$work/b
	mkdir -p "$d/sources.list.d"
	cat >"$d/sources.list" <<'EOF'
# deb file:/srv/commented/debian bookworm main
deb [arch=amd64 signed-by=/k/x.gpg] file:/srv/m/debian bookworm main contrib
deb-src file:/srv/m/debian bookworm main
EOF
	cat >"$d/sources.list.d/bp.sources" <<'EOF'
Types: deb deb-src
URIs: file:/srv/n/debian
Suites: bookworm-backports
Components: main
Enabled: no

Types: deb
URIs: file:/srv/n/debian
Suites: bookworm-backports
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 xyz
EOF
	text=$(apt_text "$d")
	want=$'Types: deb-src\nURIs: file:/srv/m/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /k/x.gpg'
	[ "$text" = "$want" ] && ok "one-line + deb822: only the missing entry" ||
		fail "one-line: got '$text', want '$want'"

	# Everything already there: nothing to write.
	cat >"$d/sources.list.d/more.list" <<'EOF'
deb-src file:/srv/m/debian bookworm-backports main
EOF
	text=$(apt_text "$d") && [ -z "$text" ] &&
		ok "nothing missing: empty list file" || fail "got '$text'"

	# Debian 13 has what vnpu needs in the release itself: only its deb-src
	# is added, from the archive its own entry uses.
	d=$work/t
	mkdir -p "$d/sources.list.d"
	cat >"$d/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: file:/srv/archive/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: file:/srv/security/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	text=$(apt_text "$d" trixie)
	want=$'Types: deb-src\nURIs: file:/srv/archive/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg'
	[ "$text" = "$want" ] && ok "trixie: its own deb-src only, no backports" ||
		fail "trixie: got '$text', want '$want'"
	# The same sources on a bookworm machine have no entry for it.
	if text=$(apt_text "$d" bookworm 2>"$work/err"); then
		fail "bookworm on trixie's sources: succeeded with '$text'"
	else
		grep -q "no 'deb' entry for bookworm" "$work/err" &&
			ok "the machine's release, not another's" ||
			fail "bookworm on trixie's sources: $(cat "$work/err")"
	fi

	# No Debian archive at all: a clear error, no file.
	d=$work/c
	mkdir -p "$d/sources.list.d"
	if text=$(apt_text "$d" 2>"$work/err"); then
		fail "no archive: succeeded with '$text'"
	else
		grep -q "no 'deb' entry for bookworm" "$work/err" &&
			ok "no archive: $(cat "$work/err")" ||
			fail "no archive: $(cat "$work/err")"
	fi
	;;
no-mirror-hosts)
	# The project names no package archive: scripts take it from the
	# machine's apt sources. Files under version control, this one aside.
	cd "$top" || exit 1
	if git rev-parse --git-dir >/dev/null 2>&1; then
		mapfile -t files < <(git ls-files)
	else
		mapfile -t files < <(find . -path ./.git -prune -o -type f -print)
	fi
	mapfile -t files < <(printf '%s\n' "${files[@]}" |
		grep -v 'tests/scripts/scripts_test.sh$')
	hits=$(grep -I -n -E \
		'([a-z0-9-]+\.)*debian\.(org|net)/debian|(deb|ftp|httpredir|security|snapshot|cdn-fastly|mirrors?)[a-z0-9.-]*\.debian\.(org|net)|://[^ /]+/debian(-security)?/?( |$)' \
		"${files[@]}" 2>/dev/null || true)
	[ -z "$hits" ] && ok "no archive host in ${#files[@]} files" ||
		fail "archive hosts named: $hits"
	;;
qemu-sources)
	# QEMU's build of the device lists the kernel and simulator sources
	# itself (it compiles them in QEMU's tree): the same files as ours.
	list() { # the quoted *.c names of a meson files() list
		sed -n "/^$2 = .*files(/,/^)/p" "$top/$1" |
			grep -o "'[a-z_0-9]*\.c'" | tr -d "'" | sort
	}
	qemu_list() {
		grep -o "'$1/[a-z_0-9]*\.c'" "$top/qemu-device/meson.build" |
			sed "s|'$1/||; s|'||" | sort
	}
	for pair in kernels:kernels_src firmware-sim:fwsim_src; do
		dir=${pair%%:*}
		ours=$(list "$dir/meson.build" "${pair#*:}")
		theirs=$(qemu_list "$dir")
		if [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
			ok "qemu-device builds the $(echo "$ours" | wc -l) $dir sources"
		else
			fail "$dir sources differ from qemu-device/meson.build:" \
				"$(diff <(echo "$ours") <(echo "$theirs") | grep '^[<>]')"
		fi
	done
	;;
cache-keys)
	# A cache key names the inputs by content (and checkout-relative
	# names), never by where the checkout is: the same sources in two
	# directories must share QEMU's build and the initramfs.
	for c in one two; do
		mkdir -p "$work/$c/tree"
		(cd "$top" && cp -a scripts qemu-device firmware-sim kernels \
			include Kbuild kernel-module "$work/$c/tree/")
	done
	# apt's answer for QEMU's source, the same in both.
	mkdir -p "$work/bin"
	cat >"$work/bin/apt-cache" <<'EOF2'
#!/bin/sh
[ "$1" = showsrc ] || exit 1
printf '%s\n' 'Package: qemu' 'Version: 1:10.0.2+ds-1~bpo12+1' \
	'Checksums-Sha256:' \
	' 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef 1 qemu_10.0.2+ds.orig.tar.xz'
EOF2
	chmod +x "$work/bin/apt-cache"
	qemu_key() { # what build-qemu.sh --print-path says of the empty cache
		local said
		said=$(VNPU_CACHE=$work/cache PATH=$work/bin:$PATH \
			"$work/$1/tree/scripts/build-qemu.sh" --print-path 2>&1)
		grep -o 'key [0-9a-f]*' <<<"$said" || echo "none: $said"
	}
	k1=$(qemu_key one)
	k2=$(qemu_key two)
	[[ $k1 =~ ^key\ [0-9a-f]{16}$ ]] && [ "$k1" = "$k2" ] &&
		ok "build-qemu.sh: one $k1 for two checkouts" ||
		fail "build-qemu.sh: $k1 and $k2 for the same sources"
	# The initramfs of a stand-in guest kernel dir, with a module, the
	# firmware and an added file, each at the same place in each tree.
	g=$work/guest
	mkdir -p "$g/lib/modules/6.12.0-test"
	touch "$g/vmlinuz" "$g/lib/modules/6.12.0-test/modules.dep"
	echo "linux-image-test 1" >"$g/package"
	for c in one two; do
		head -c 64 /dev/zero >"$work/$c/tree/vnpu.ko"
		head -c 64 /dev/zero >"$work/$c/tree/vnpu.fw"
		mkdir -p "$work/$c/tree/add"
		echo data >"$work/$c/tree/add/file"
		touch -d '2020-01-01' "$work/$c/tree/add/file" "$work/$c/tree/add"
	done
	ramfs_key() {
		(cd "$work/$1/tree" && VNPU_CACHE=$work/cache \
			scripts/initramfs.sh --guest "$g" --module "$PWD/vnpu.ko" \
			--firmware vnpu.fw --add "$PWD/add:/opt/x" --print-key \
			2>"$work/err") || echo "failed: $(cat "$work/err")"
	}
	k1=$(ramfs_key one)
	k2=$(ramfs_key two)
	[[ $k1 =~ ^[0-9a-f]{16}$ ]] && [ "$k1" = "$k2" ] &&
		ok "initramfs.sh: one key $k1 for two checkouts" ||
		fail "initramfs.sh: '$k1' and '$k2' for the same inputs"
	;;
keep-newest)
	. "$top/scripts/lib/cache.sh"
	set -e
	keep_newest 3 "$work/absent" '*' && ok "absent dir" || fail "absent dir"
	mkdir "$work/k"
	keep_newest 3 "$work/k" '*' && ok "empty dir" || fail "empty dir"
	for i in 1 2 3 4 5; do
		mkdir "$work/k/run $i"
		touch -d "-$i min" "$work/k/run $i"
	done
	touch -d '-1 day' "$work/k/x.tmp.1"
	keep_newest 2 "$work/k" '*' '*.tmp.*'
	set +e
	left=$(cd "$work/k" && ls -A | tr '\n' '|')
	[ "$left" = "run 1|run 2|x.tmp.1|" ] && ok "two newest and the excluded" ||
		fail "left: $left"
	;;
shellcheck)
	cd "$top" || exit 1
	command -v shellcheck >/dev/null || {
		fail "shellcheck is not installed (scripts/deps.sh installs it)"
		exit 1
	}
	scripts=(scripts/*.sh scripts/lib/*.sh scripts/guest/init
		scripts/guest/vnpu-hotplug scripts/guest/trace-null-jobs
		tests/*/*.sh .ci/run)
	if shellcheck -x -S warning "${scripts[@]}"; then
		ok "${#scripts[@]} scripts clean at severity warning"
	else
		fail "shellcheck"
	fi
	;;
*)
	echo "usage: $0 apt-sources|no-mirror-hosts|keep-newest|shellcheck|qemu-sources|cache-keys" >&2
	exit 2
	;;
esac
[ "$fails" -eq 0 ]
