#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: build, then run the workloads on the NPU and check each
# against the CPU. Until the QEMU device, driver and VM land, the NPU is the
# device simulator in-process, in multi-core mode.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
echo "== building (release)"
scripts/build.sh build-release --buildtype=release -Dtests=disabled
echo "== running workloads on the simulated NPU"
exec build-release/workloads/vnpu-workloads "$@"
