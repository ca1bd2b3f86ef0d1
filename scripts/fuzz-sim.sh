#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzzes the firmware simulator's command processor with libFuzzer.
#
#   scripts/fuzz-sim.sh [SECONDS] [BUILD_DIR]
#
# Sets up a clang build with ASan+UBSan and coverage instrumentation for
# the library (default build-fuzz), then runs tests/fuzz/fuzz_cmd.c from the
# committed corpus for SECONDS (default 60). New inputs go to
# BUILD_DIR/fuzz-work; crashes to BUILD_DIR/fuzz-artifacts/ (copy a crash
# into tests/fuzz/corpus/ once fixed, as a regression input).
set -eu

seconds=${1:-60}
build=${2:-build-fuzz}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if [ ! -f "$build/build.ninja" ]; then
	rm -rf "$build" # absent, or an interrupted setup
	CC=clang meson setup "$build" \
		-Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined' \
		-Dfuzz=enabled -Dbench=disabled
fi
ninja -C "$build" -j2 tests/fuzz/fuzz-cmd
mkdir -p "$build/fuzz-work" "$build/fuzz-artifacts"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
exec "$build/tests/fuzz/fuzz-cmd" \
	-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
	-print_final_stats=1 \
	-artifact_prefix="$build/fuzz-artifacts/" \
	"$build/fuzz-work" tests/fuzz/corpus
