#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: installs dependencies, builds with warnings fatal,
# runs every unit and device test, then again under ASan+UBSan with clang
# (which also builds and briefly runs the libFuzzer target), and prints
# "N passed, N failed" over all of it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh

status=0
run_suite() {
	local dir=$1
	shift
	echo "== $dir: build"
	scripts/build.sh "$dir" -Dwerror=true "$@"
	echo "== $dir: test"
	meson test -C "$dir" --print-errorlogs --num-processes 2 || status=1
}

run_suite build-test --buildtype=debugoptimized
CC=clang run_suite build-test-asan --buildtype=debug \
	-Db_sanitize=address,undefined -Db_lundef=false

python3 - build-test build-test-asan <<'PY'
import json, sys
passed = failed = skipped = 0
for d in sys.argv[1:]:
    with open(f"{d}/meson-logs/testlog.json") as f:
        for line in f:
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
