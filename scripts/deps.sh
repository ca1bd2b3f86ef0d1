#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing vnpu needs from Debian's archive, only
# when something is missing, so a second run costs nothing. meson comes from
# bookworm-backports (QEMU 10 needs >= 1.5), so the whole tree uses one meson.
set -euo pipefail

packages=(
	build-essential ninja-build pkg-config python3
	check                   # unit tests
	clang libclang-rt-14-dev  # libFuzzer and clang's sanitizer runtimes
	libopenblas-dev         # GEMM benchmark baseline only
	libdrm-dev              # the runtime's drm backend
)
backports_list=/etc/apt/sources.list.d/vnpu-backports.sources

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
meson_ok=0
if command -v meson >/dev/null &&
	dpkg --compare-versions "$(meson --version)" ge 1.5; then
	meson_ok=1
fi
[ ${#missing[@]} -eq 0 ] && [ $meson_ok -eq 1 ] && exit 0

if [ ! -f "$backports_list" ]; then
	echo "deps: adding bookworm-backports (binary and source)"
	$sudo tee "$backports_list" >/dev/null <<'LIST'
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
echo "deps: installing ${missing[*]} meson(backports)"
$sudo apt-get update -qq
[ ${#missing[@]} -eq 0 ] ||
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ $meson_ok -eq 1 ] ||
	$sudo apt-get install -y -qq --no-install-recommends \
		-t bookworm-backports meson >/dev/null
