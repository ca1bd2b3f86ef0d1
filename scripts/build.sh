#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures (once) and builds one build directory.
#   scripts/build.sh [DIR] [meson options...]
# DIR defaults to build; options only apply when DIR is configured afresh.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
		cat "$dir.setup.log"
		exit 1
	}
	rm -f "$dir.setup.log"
fi
ninja -C "$dir"
