#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds one build directory.
#   scripts/build.sh [DIR] [meson options...]
# DIR defaults to build. The directory is set up with exactly these options
# and $CC: one that an earlier run (or a person) set up otherwise, or whose
# setup was interrupted, is set up again, so its state never decides what
# gets built. Later `meson configure` changes are kept while the options
# given here stay the same.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build}
shift || true
want=$(printf '%s\n' "CC=${CC:-}" "$@")
stamp=$dir/.vnpu-setup
if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	if [ -e "$dir" ] && [ ! -d "$dir/meson-private" ] &&
		[ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
		echo "build: $dir exists and is not a meson build dir" >&2
		exit 2
	fi
	if [ -e "$dir" ]; then
		echo "build: setting $dir up again (options, compiler or an" \
			"unfinished setup differ from this call)" >&2
		rm -rf "$dir"
	fi
	log=$(mktemp "${TMPDIR:-/tmp}/vnpu-setup.XXXXXX")
	if ! meson setup "$dir" "$@" >"$log" 2>&1; then
		cat "$log"
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	printf '%s\n' "$want" >"$stamp"
fi
ninja -C "$dir"
