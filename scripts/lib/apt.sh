# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced (bash) by the scripts that install from Debian's archive, so that
# there is one list file of ours and one way to call apt. No archive host is
# named here: the list file uses the archive the machine's own apt sources
# already use, whatever mirror that is.
#
#   sudo               "" as root, else "sudo"
#   apt_get ARGS       apt-get that waits up to 10 min for another apt's lock
#   apt_installed PKG  whether the package is installed
#   apt_sources        every enabled source of the machine: "TYPE SUITE URI
#                      KEYRING" lines (KEYRING "-" when none is named)
#   debian_archive     "URI KEYRING" of the machine's archive for bookworm
#   ensure_backports   bookworm-backports (deb, deb-src) and bookworm's
#                      deb-src in the package lists; writes our list file
#                      with what the machine lacks and updates the lists
#                      only when something changed or is missing
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

vnpu_apt_list=/etc/apt/sources.list.d/vnpu-backports.sources
apt_sources_dir=${VNPU_APT_SOURCES_DIR:-/etc/apt}

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

# "URI KEYRING" of the archive the machine installs bookworm from.
debian_archive() {
	local archive key
	read -r _ _ archive key < <(apt_sources |
		awk '$1 == "deb" && $2 == "bookworm"' | head -1) || true
	if [ -z "${archive:-}" ]; then
		echo "apt: the machine's apt sources ($apt_sources_dir/sources.list," \
			"$apt_sources_dir/sources.list.d/) have no 'deb' entry for" \
			"bookworm: configure Debian's archive first" >&2
		return 1
	fi
	echo "$archive $key"
}

# What our list file must hold, given what the machine has elsewhere.
vnpu_apt_list_text() {
	local sources archive key want type suite text=""
	read -r archive key < <(debian_archive) || return 1
	sources=$(apt_sources)
	for want in "deb bookworm-backports" "deb-src bookworm-backports" \
		"deb-src bookworm"; do
		read -r type suite <<<"$want"
		awk -v t="$type" -v s="$suite" '$1 == t && $2 == s {f = 1}
			END {exit !f}' <<<"$sources" && continue
		[ -z "$text" ] || text+=$'\n'
		text+="Types: $type"$'\n'"URIs: $archive"$'\n'
		text+="Suites: $suite"$'\n'"Components: main"$'\n'
		[ "$key" = - ] || text+="Signed-By: $key"$'\n'
	done
	printf '%s' "$text"
}

# Lists apt has fetched for SUITE's binary or source index.
apt_lists_have() {
	compgen -G "/var/lib/apt/lists/*_dists_$1_main_$2*" >/dev/null
}

# bookworm-backports binary and source (meson >= 1.5, QEMU 10.0's source,
# the newer guest kernel) and bookworm's deb-src (apt-cache showsrc).
ensure_backports() {
	local text changed=0
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
	if [ $changed -eq 1 ] ||
		! apt_lists_have bookworm-backports binary- ||
		! apt_lists_have bookworm-backports source ||
		! apt_lists_have bookworm source; then
		echo "apt: updating the package lists" >&2
		apt_get update -qq
	fi
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
