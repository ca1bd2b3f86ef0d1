# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced (bash) by the scripts that install from Debian's archive, so that
# there is one list file of ours and one way to call apt. No archive host is
# named here: the list file uses the archive the machine's own apt sources
# already use, whatever mirror that is. No release is assumed either: it is
# the machine's (/etc/os-release VERSION_CODENAME).
#
#   sudo               "" as root, else "sudo"
#   apt_get ARGS       apt-get that waits up to 10 min for another apt's lock
#   apt_installed PKG  whether the package is installed
#   debian_codename    the machine's Debian release (bookworm, trixie, ...)
#   vnpu_suite         where the release has what vnpu needs newer than its
#                      own first release: bookworm-backports on bookworm
#                      (meson >= 1.5, Linux 6.12, QEMU 10.0), the release
#                      itself from trixie on, which has them all
#   apt_from           apt-get's options to install from vnpu_suite: none
#                      when that is the release itself (so its -updates
#                      and -security versions still win)
#   apt_sources        every enabled source of the machine: "TYPE SUITE URI
#                      KEYRING" lines (KEYRING "-" when none is named)
#   debian_archive     "URI KEYRING" of the machine's archive for its release
#   ensure_apt_sources vnpu_suite (deb, deb-src) and the release's deb-src
#                      in the package lists; writes our list file with what
#                      the machine lacks and updates the lists only when
#                      something changed or is missing (ensure_backports is
#                      its older name)
#   kernel_image       "PACKAGE VERSION" of the Linux 6.12 image the newest
#                      linux-image-amd64 apt knows depends on (the driver's
#                      series; its release is PACKAGE without linux-image-)
#   clang_rt_dev       the libclang-rt-N-dev of the release's default clang
#   fetch_orig PKG VER DIR TARBALL SHA256
#                      the orig tarball of source package PKG=VER in DIR,
#                      downloaded (apt-get source) unless DIR holds it with
#                      that checksum; fails when it cannot be had so

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || {
		echo "apt: not root and no sudo: run as root or install sudo" >&2
		exit 1
	}
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

apt_get() { $sudo apt-get -o DPkg::Lock::Timeout=600 "$@"; }

apt_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = \
		installed ]
}

# (The file kept its first name, from when it only added bookworm-backports.)
vnpu_apt_list=/etc/apt/sources.list.d/vnpu-backports.sources
apt_sources_dir=${VNPU_APT_SOURCES_DIR:-/etc/apt}

debian_codename() {
	local f=${VNPU_OS_RELEASE:-/etc/os-release} c
	c=$(sed -n 's/^VERSION_CODENAME=["'\'']\{0,1\}\([a-z]*\).*/\1/p' \
		"$f" 2>/dev/null | head -1)
	if [ -z "$c" ]; then
		echo "apt: $f names no VERSION_CODENAME: is this Debian?" >&2
		return 1
	fi
	echo "$c"
}
codename=$(debian_codename) || exit 1
case $codename in
bookworm) vnpu_suite=bookworm-backports ;;
*) vnpu_suite=$codename ;;
esac
# shellcheck disable=SC2034 # for the scripts that source this file
if [ "$vnpu_suite" = "$codename" ]; then apt_from=(); else apt_from=(-t "$vnpu_suite"); fi

# One-line (sources.list, *.list) and deb822 (*.sources) entries, ours
# excepted, one "TYPE SUITE URI KEYRING" line per type and suite.
apt_sources() {
	local f
	for f in "$apt_sources_dir/sources.list" \
		"$apt_sources_dir"/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '
		{ sub(/#.*/, "") }
		$1 == "deb" || $1 == "deb-src" {
			i = 2; key = "-"
			if ($2 ~ /^\[/) {
				for (; i <= NF; i++) {
					if ($i ~ /^\[?signed-by=/) {
						key = $i
						sub(/^\[?signed-by=/, "", key)
						sub(/\]$/, "", key)
					}
					if ($i ~ /\]$/) break
				}
				i++
			}
			if (i + 1 <= NF) print $1, $(i + 1), $i, key
		}' "$f"
	done
	for f in "$apt_sources_dir"/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$(basename "$f")" = "$(basename "$vnpu_apt_list")" ] &&
			continue
		awk '
		function flush(   nt, t, ns, s, nu, i, j) {
			if (types != "" && uris != "" && suites != "" &&
			    tolower(enabled) != "no") {
				nt = split(types, t, /[ \t]+/)
				ns = split(suites, s, /[ \t]+/)
				split(uris, u, /[ \t]+/)
				for (i = 1; i <= nt; i++)
					for (j = 1; j <= ns; j++)
						if (t[i] != "" && s[j] != "")
							print t[i], s[j], u[1], key
			}
			types = uris = suites = enabled = field = ""
			key = "-"
		}
		BEGIN { key = "-" }
		/^#/ { next }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]/ { next }	# continuation (an inline key block)
		{
			field = tolower($1); sub(/:$/, "", field)
			val = $0; sub(/^[^:]*:[ \t]*/, "", val)
			if (field == "types") types = val
			else if (field == "uris") uris = val
			else if (field == "suites") suites = val
			else if (field == "enabled") enabled = val
			else if (field == "signed-by" && val ~ /^\//) key = val
		}
		END { flush() }' "$f"
	done
}

# "URI KEYRING" of the archive the machine installs its release from.
debian_archive() {
	local archive key
	read -r _ _ archive key < <(apt_sources |
		awk -v c="$codename" '$1 == "deb" && $2 == c' | head -1) || true
	if [ -z "${archive:-}" ]; then
		echo "apt: the machine's apt sources ($apt_sources_dir/sources.list," \
			"$apt_sources_dir/sources.list.d/) have no 'deb' entry for" \
			"$codename: configure Debian's archive first" >&2
		return 1
	fi
	echo "$archive $key"
}

# The entries vnpu needs: "TYPE SUITE" lines, and those of VNPU_APT_EXTRA
# (newline-separated, for a caller that needs more, such as the package
# test's other kernel).
vnpu_apt_wanted() {
	[ "$vnpu_suite" = "$codename" ] ||
		printf '%s\n' "deb $vnpu_suite" "deb-src $vnpu_suite"
	echo "deb-src $codename"
	[ -z "${VNPU_APT_EXTRA:-}" ] || printf '%s\n' "$VNPU_APT_EXTRA"
}

# What our list file must hold, given what the machine has elsewhere.
vnpu_apt_list_text() {
	local sources archive key type suite text=""
	read -r archive key < <(debian_archive) || return 1
	sources=$(apt_sources)
	while read -r type suite; do
		awk -v t="$type" -v s="$suite" '$1 == t && $2 == s {f = 1}
			END {exit !f}' <<<"$sources" && continue
		[ -z "$text" ] || text+=$'\n'
		text+="Types: $type"$'\n'"URIs: $archive"$'\n'
		text+="Suites: $suite"$'\n'"Components: main"$'\n'
		[ "$key" = - ] || text+="Signed-By: $key"$'\n'
	done < <(vnpu_apt_wanted)
	printf '%s' "$text"
}

# Lists apt has fetched for SUITE's binary or source index.
apt_lists_have() {
	compgen -G "/var/lib/apt/lists/*_dists_$1_main_$2*" >/dev/null
}

# vnpu_suite's binary and source lists (meson >= 1.5, QEMU 10.0's source,
# the 6.12 kernel) and the release's deb-src (apt-cache showsrc).
ensure_apt_sources() {
	local text changed=0 type suite
	text=$(vnpu_apt_list_text) || exit 1
	if [ -z "$text" ]; then
		if [ -f "$vnpu_apt_list" ]; then
			$sudo rm -f "$vnpu_apt_list"
			changed=1
		fi
	elif [ "$(cat "$vnpu_apt_list" 2>/dev/null)" != "$text" ]; then
		echo "apt: writing $vnpu_apt_list (archive from the machine's" \
			"own apt sources)" >&2
		printf '%s\n' "$text" | $sudo tee "$vnpu_apt_list" >/dev/null
		changed=1
	fi
	apt_lists_have "$codename" binary- || changed=1
	while read -r type suite; do
		if [ "$type" = deb ]; then
			apt_lists_have "$suite" binary- || changed=1
		else
			apt_lists_have "$suite" source || changed=1
		fi
	done < <(vnpu_apt_wanted)
	if [ $changed -eq 1 ]; then
		echo "apt: updating the package lists" >&2
		apt_get update -qq
	fi
}
ensure_backports() { ensure_apt_sources; }

# "PACKAGE VERSION" of the Linux 6.12 image that the newest
# linux-image-amd64 depending on one names (the version moves: asked from
# apt each time, never written down). Another series (a release's own
# older kernel, a newer backports one) is not the driver's.
kernel_image() {
	local pkg ver
	pkg=$(apt-cache show linux-image-amd64 2>/dev/null | awk '
		/^Version: / {v = $2}
		/^Depends: / {
			n = split($0, d, /[ ,]+/)
			for (i = 1; i <= n; i++)
				if (d[i] ~ /^linux-image-6\.12\.[^ ]*-amd64$/)
					print v, d[i]
		}' | sort -V | tail -1 | awk '{print $2}')
	[ -n "$pkg" ] || return 1
	ver=$(apt-cache show "$pkg" 2>/dev/null |
		awk '/^Version: /{print $2}' | sort -V | tail -1)
	[ -n "$ver" ] || return 1
	echo "$pkg $ver"
}

# clang's compiler-rt (sanitizers, libFuzzer) is versioned with the clang
# the release's clang package depends on (14 on Debian 12, 19 on 13).
clang_rt_dev() {
	local v
	v=$({ dpkg-query -W -f='${Depends}\n' clang 2>/dev/null |
		grep . || apt-cache depends clang 2>/dev/null; } |
		grep -o 'clang-[0-9][0-9]*' | head -1)
	[ -n "$v" ] || return 1
	echo "libclang-rt-${v#clang-}-dev"
}

fetch_orig() {
	local pkg=$1 ver=$2 dir=$3 tarball=$4 sha=$5

	mkdir -p "$dir"
	if [ ! -f "$dir/$tarball" ] ||
		! echo "$sha  $dir/$tarball" | sha256sum -c --status; then
		echo "apt: downloading $tarball (source of $pkg $ver)" >&2
		rm -f "$dir/$tarball"
		# The .dsc and debian.tar.xz may be missing from the mirror; the
		# orig tarball is all the callers use.
		(cd "$dir" && apt-get source --download-only \
			"$pkg=$ver" >/dev/null 2>&1) || true
	fi
	echo "$sha  $dir/$tarball" | sha256sum -c --status || {
		echo "apt: $tarball missing or checksum mismatch" >&2
		return 1
	}
}
