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

# apt_sources / vnpu_apt_list_text against a sources dir of our making.
apt_text() {
	VNPU_APT_SOURCES_DIR=$1 bash -c '. "$0/scripts/lib/apt.sh" &&
		vnpu_apt_list_text' "$top"
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
	echo "usage: $0 apt-sources|no-mirror-hosts|keep-newest|shellcheck" >&2
	exit 2
	;;
esac
[ "$fails" -eq 0 ]
