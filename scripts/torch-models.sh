#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# torchvision's own models on npu against the CPU (tests/torch-models,
# docs/torch.md "Real models"): makes ready the Python that has torchvision
# (scripts/torch-env.sh --models), builds torch_vnpu for its PyTorch and
# runs the tests with pytest on the simulator.
#
#   scripts/torch-models.sh [--build DIR] [--results FILE] [PYTEST ARGS]
#
# --build    the build directory (default build-models: release, no tests)
# --results  also write one JSON line per test ({"name", "result"}, as
#            meson's testlog.json), for scripts/test.sh's count
set -euo pipefail
cd "$(dirname "$0")/.."

build="build-models"
results=""
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--build)
		build=${2:?--build needs a directory}
		shift 2
		;;
	--results)
		results=${2:?--results needs a file}
		shift 2
		;;
	*)
		args+=("$1")
		shift
		;;
	esac
done

scripts/deps.sh
python=$(scripts/torch-env.sh --models)
scripts/build.sh "$build" --buildtype=release -Dtests=disabled \
	-Dtorch=enabled -Dpython="$python" >/dev/null
echo "torch-models: $("$python" -c 'import torch, torchvision
print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")')"

junit=$(mktemp)
trap 'rm -f "$junit"' EXIT
rc=0
PYTHONPATH="$PWD/$build${PYTHONPATH:+:$PYTHONPATH}" VNPU_BACKEND=sim \
	PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -p no:cacheprovider \
	-q -rfE --junitxml="$junit" tests/torch-models "${args[@]}" || rc=$?
if [ -n "$results" ]; then
	mkdir -p "$(dirname "$results")"
	"$python" - "$junit" "$results" "$rc" <<'PY'
import json, sys, xml.etree.ElementTree as ET
junit, out, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = []
try:
    cases = ET.parse(junit).iter("testcase")
except (ET.ParseError, FileNotFoundError):
    cases = []
for case in cases:
    kinds = {child.tag for child in case}
    result = ("FAIL" if kinds & {"failure", "error"} else
              "SKIP" if "skipped" in kinds else "OK")
    rows.append({"name": "torch-models/" + case.get("name"), "result": result})
# a run that ended before reporting its tests counts as a failure
if rc != 0 and not any(r["result"] == "FAIL" for r in rows):
    rows.append({"name": "torch-models/run", "result": "FAIL"})
with open(out, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
fi
exit $rc
