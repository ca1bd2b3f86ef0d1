#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: installs dependencies, builds with warnings fatal,
# runs every unit and device test, then again under ASan+UBSan with clang
# (which also builds and briefly runs the libFuzzer target), torchvision's
# models on npu against the CPU (scripts/torch-models.sh), a sample of
# PyTorch's own device-generic tests on npu (scripts/torch-suite.sh), then builds
# QEMU with the vnpu device (cached outside the checkout) and runs the
# 'qemu' suite against it in both execution modes, then the 'vm' suite
# (scripts/vm.sh booting the guest in that QEMU), the runtime suite in the
# guest on the drm backend, the driver's smoke test, the workloads and a
# PyTorch smoke test through vnpu.ko, the driver's hardware test suite
# (tests/hw), then builds the Debian packages and tests them installed in a
# clean root and in the VM (tests/package), and prints
# "N passed, N failed" over all of it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
# the Python with the PyTorch torch_vnpu is built for (docs/torch.md)
torch_python=$(scripts/torch-env.sh)

status=0
# Every stage writes its results to DIR/meson-logs/testlog.json. A stage
# is listed before it runs and its old results are removed, so that one
# which stops early counts as failed instead of repeating an earlier run.
logs=()
stage() {
	logs+=("$1")
	rm -f "$1/meson-logs/testlog.json"
}
run_suite() {
	local dir=$1
	shift
	stage "$dir"
	echo "== $dir: build"
	scripts/build.sh "$dir" -Dwerror=true "$@" ||
		{ echo "== $dir: build FAILED"; status=1; return; }
	echo "== $dir: test"
	meson test -C "$dir" --print-errorlogs --num-processes 2 || status=1
}

# torch_vnpu is required here: torch-env.sh made its PyTorch ready
run_suite build-test --buildtype=debugoptimized -Dtorch=enabled \
	-Dpython="$torch_python"
CC=clang run_suite build-test-asan --buildtype=debug \
	-Db_sanitize=address,undefined -Db_lundef=false

# torchvision's own models on npu against the CPU (scripts/torch-models.sh:
# the PyTorch with torchvision of torch-env.sh --models, and a torch_vnpu
# built for it), one result per test.
stage build-test-models
echo "== torch-models: torchvision's models on npu against the CPU"
scripts/torch-models.sh --build build-test-models \
	--results build-test-models/meson-logs/testlog.json || status=1

# PyTorch's own device-generic test classes on npu, one test in 8
# (scripts/torch-suite.sh): Debian 13's PyTorch 2.6 with its test files, on
# Debian 12 in a Debian 13 clean root; one result per class.
stage build-test-suite
echo "== torch-suite: PyTorch's device-generic tests on npu"
scripts/torch-suite.sh --build build-test --sample 8 \
	--results build-test-suite/meson-logs/testlog.json || status=1

# The QEMU device: qemu-system-x86_64 built by scripts/build-qemu.sh, the
# 'qemu' suite (threads and deterministic mode) in a build dir pointed at it.
echo "== qemu: build"
stage build-test-qemu
if qemu=$(scripts/build-qemu.sh) &&
	scripts/build.sh build-test-qemu -Dwerror=true; then
	meson configure build-test-qemu -Dqemu="$qemu"
	echo "== build-test-qemu: test (suite qemu)"
	meson test -C build-test-qemu --suite qemu --print-errorlogs || status=1
else
	echo "== qemu: build FAILED"
	qemu=""
	status=1
fi

# The VM: scripts/vm.sh boots Debian's 6.12 kernel with the vnpu device
# in that QEMU; tests/vm is a meson project of its own (suite 'vm') so its
# results are counted with the rest.
stage build-test-vm
if [ -n "$qemu" ]; then
	echo "== build-test-vm: test (suite vm)"
	if [ ! -f build-test-vm/build.ninja ]; then
		rm -rf build-test-vm # an interrupted setup
		meson setup build-test-vm tests/vm -Dqemu="$qemu" >/dev/null
	fi
	meson configure build-test-vm -Dqemu="$qemu"
	meson test -C build-test-vm --suite vm --print-errorlogs || status=1
else
	echo "== vm: not run (no QEMU)"
	status=1
fi

# The runtime's test suite in that VM on the drm backend (vnpu.ko): one
# result per test case, written where the count below reads it.
stage build-test-vm-runtime
if [ -n "$qemu" ]; then
	echo "== vm-runtime: runtime suite in the guest (VNPU_BACKEND=drm)"
	mkdir -p build-test-vm-runtime/meson-logs
	tests/vm/run-runtime-suite.sh --build build-test \
		--results build-test-vm-runtime/meson-logs/testlog.json \
		-- --qemu "$qemu" || status=1
fi

# The driver in that VM: its smoke test (test mode: faults, hang, reset,
# ban) as root, and the workloads as a non-root user through vnpu.ko, each
# a pass/fail entry in the count.
stage build-test-vm-driver
if [ -n "$qemu" ] && ko=$(scripts/build-module.sh); then
	echo "== vm-driver: smoke test and workloads through vnpu.ko"
	mkdir -p build-test-vm-driver/meson-logs
	results=build-test-vm-driver/meson-logs/testlog.json
	: >"$results"
	vm_check() {
		local name=$1 result=OK
		shift
		scripts/vm.sh run --qemu "$qemu" --module "$ko" \
			--firmware build-test/tools/vnpu.fw "$@" ||
			{ result=FAIL; status=1; }
		echo "{\"name\": \"$name\", \"result\": \"$result\"}" >>"$results"
	}
	vm_check vm-driver/smoke --device-opts test-mode=on \
		--add build-test/tests/hw/vnpu-smoke:/opt/vnpu/bin/vnpu-smoke \
		-- /opt/vnpu/bin/vnpu-smoke
	vm_check vm-driver/workloads --user \
		--add build-test/workloads/vnpu-workloads:/opt/vnpu/bin/vnpu-workloads \
		--add build-test/workloads/vnpu-dispatch-workloads:/opt/vnpu/bin/vnpu-dispatch-workloads \
		-- sh -c 'export VNPU_BACKEND=drm; /opt/vnpu/bin/vnpu-workloads &&
			/opt/vnpu/bin/vnpu-dispatch-workloads'
	# PyTorch in the guest (tests/vm/torch_smoke.py): the host's Debian
	# userland over --host-root (and the checkout, where torch-env.sh's
	# environment is), this build's torch_vnpu, as the non-root
	# user through vnpu.ko. One result per check, and one for the run
	# (which also fails on a guest kernel problem or a check that never
	# printed its verdict).
	echo "== vm-driver: PyTorch smoke test in the guest"
	torch_log=build-test-vm-driver/torch-smoke.log
	result=OK
	scripts/vm.sh run --qemu "$qemu" --module "$ko" \
		--firmware build-test/tools/vnpu.fw --host-root --user -- \
		sh -c 'VNPU_BACKEND=drm PYTHONPATH="$PWD/build-test" \
			PYTHONDONTWRITEBYTECODE=1 exec "$1" \
			tests/vm/torch_smoke.py' sh "$torch_python" | tee "$torch_log" ||
		{ result=FAIL; status=1; }
	awk '$1 == "PASS" || $1 == "FAIL" {
		name = $2; sub(/:$/, "", name)
		printf "{\"name\": \"vm-driver/torch/%s\", \"result\": \"%s\"}\n",
			name, $1 == "PASS" ? "OK" : "FAIL"
	}' "$torch_log" >>"$results"
	echo "{\"name\": \"vm-driver/torch-smoke\", \"result\": \"$result\"}" >>"$results"
else
	echo "== vm-driver: not run (no QEMU or no module)"
	status=1
fi

# The driver's hardware test suite (tests/hw, docs/testing.md) in the VM:
# one boot, every category program, one result per Check test.
stage build-test-vm-hw
if [ -n "$qemu" ]; then
	echo "== vm-hw: the hardware test suite in the guest"
	mkdir -p build-test-vm-hw/meson-logs
	tests/hw/run-hw-suite.sh --build build-test \
		--results build-test-vm-hw/meson-logs/testlog.json \
		-- --qemu "$qemu" || status=1
fi

# The package path (debian/, tests/package): the Debian packages built and
# checked by lintian, installed with apt in a clean root of the machine's
# release where DKMS builds vnpu.ko, programs build against the -dev
# packages with pkg-config alone and torch_vnpu imports (its .deb, or its
# wheel where Debian's PyTorch is too old); then the VM boots that DKMS-built module and
# the packaged firmware and runs the packaged workloads.
stage build-test-package
if [ -n "$qemu" ]; then
	echo "== package: build, install in a clean root, boot the VM on it"
	mkdir -p build-test-package/meson-logs
	tests/package/run-package-test.sh \
		--results build-test-package/meson-logs/testlog.json \
		-- --qemu "$qemu" || status=1
fi

python3 - "${logs[@]}" <<'PY' || status=1
import json, sys
passed = failed = skipped = 0
missing = []
for d in sys.argv[1:]:
    try:
        f = open(f"{d}/meson-logs/testlog.json")
    except FileNotFoundError:
        missing.append(d)
        continue
    with f:
        for line in f:
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
for d in missing:
    print(f"{d}: the stage stopped before it wrote any result")
failed += len(missing)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
