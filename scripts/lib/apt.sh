# SPDX-License-Identifier: MIT
# Sourced (bash) by the scripts that install from Debian's archive, so that
# there is one list file for bookworm-backports and one way to call apt.
#
#   sudo             "" as root, else "sudo"
#   apt_get ARGS     apt-get that waits up to 10 min for another apt's lock
#   has_backports    whether an apt source names bookworm-backports
#   add_backports    writes the list file (once) and updates the lists

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

apt_get() { $sudo apt-get -o DPkg::Lock::Timeout=600 "$@"; }

vnpu_backports_list=/etc/apt/sources.list.d/vnpu-backports.sources

has_backports() {
	grep -rqs bookworm-backports /etc/apt/sources.list \
		/etc/apt/sources.list.d/
}

# bookworm-backports, binary and source: meson >= 1.5, QEMU 10.0's source,
# the newer guest kernel; and bookworm's deb-src, for apt-cache showsrc.
add_backports() {
	if [ ! -f "$vnpu_backports_list" ]; then
		echo "apt: adding bookworm-backports ($vnpu_backports_list)" >&2
		$sudo tee "$vnpu_backports_list" >/dev/null <<'LIST'
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
LIST
	fi
	apt_get update -qq
}
