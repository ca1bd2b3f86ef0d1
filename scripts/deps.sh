#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing vnpu needs from Debian's archive, only
# when something is missing, so a second run costs nothing.
set -euo pipefail

packages=(
	build-essential meson ninja-build pkg-config python3
	check                   # unit tests
	clang libclang-rt-14-dev  # libFuzzer and clang's sanitizer runtimes
	libopenblas-dev         # GEMM benchmark baseline only
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
