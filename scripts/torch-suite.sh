#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PyTorch's own device-generic test classes on npu (torch_vnpu):
# fetches the test files of the installed PyTorch from Debian's source
# package (cached), and runs tests/torch-suite/run_suite.py over them.
# That PyTorch is Debian 13's python3-torch (2.6): on Debian 12, whose
# PyTorch is a pip wheel without test files, the script runs itself in a
# Debian 13 clean root (scripts/clean-room.sh --suite trixie) on the
# committed HEAD. See docs/torch.md, "PyTorch's own test suite".
#
#   scripts/torch-suite.sh                   every class, all their tests
#   scripts/torch-suite.sh --sample K        one test in K (CI's sample)
#   scripts/torch-suite.sh --classes A,B     only these classes
#   scripts/torch-suite.sh --build DIR       torch_vnpu from this build
#                                            (default: build-release, as
#                                            scripts/run.sh builds it)
#   scripts/torch-suite.sh --fallback error  VNPU_FALLBACK=error: report
#                                            only (the expectation file is
#                                            that of 'allow')
#   scripts/torch-suite.sh --results FILE    one JSON line per class, as
#                                            meson's testlog.json
#                                            (scripts/test.sh)
# Other arguments go to run_suite.py (--save FILE, --log FILE, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

build=""
fallback=allow
args=()
files=() # OPTION FILE pairs of run_suite.py that name output files
while [ $# -gt 0 ]; do
	case $1 in
	--build)
		build=${2:?--build needs a directory}
		shift 2
		;;
	--fallback)
		fallback=${2:?--fallback needs allow or error}
		shift 2
		;;
	--save | --log | --results | --write-expectations)
		files+=("$1" "$(realpath -m -- "${2:?$1 needs a file}")")
		shift 2
		;;
	*)
		args+=("$1")
		shift
		;;
	esac
done
case $fallback in
allow) ;;
error) args+=(--no-expectations) ;;
*)
	echo "torch-suite: --fallback must be allow or error" >&2
	exit 2
	;;
esac

log() { echo "torch-suite: $*" >&2; }

# ---- Debian 12: the same run in a Debian 13 root ----------------------------
# Where the PyTorch is not Debian's 2.x, the run goes to a clean Debian 13
# root, which builds its own torch_vnpu against Debian's 2.6 (so --build
# has no meaning there); the output files come back through its results/.
if [ "$codename" = bookworm ]; then
	inner=(--fallback "$fallback" "${args[@]}")
	for ((i = 0; i < ${#files[@]}; i += 2)); do
		inner+=("${files[i]}" "results/torch-suite.$((i / 2))")
	done
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	log "Debian 12's PyTorch has no test files: running in a Debian 13" \
		"root on the committed HEAD (scripts/clean-room.sh --suite trixie)"
	rc=0
	scripts/clean-room.sh --suite trixie --results "$out" --command \
		"mkdir -p results && scripts/torch-suite.sh $(printf '%q ' "${inner[@]}")" ||
		rc=$?
	for ((i = 0; i < ${#files[@]}; i += 2)); do
		if [ -f "$out/torch-suite.$((i / 2))" ]; then
			mkdir -p "$(dirname "${files[i + 1]}")"
			cp "$out/torch-suite.$((i / 2))" "${files[i + 1]}"
		elif [ "${files[i]}" = --results ]; then
			# the root failed before the suite ran: one failed row
			mkdir -p "$(dirname "${files[i + 1]}")"
			echo '{"name": "torch-suite/run", "result": "FAIL"}' \
				>"${files[i + 1]}"
		fi
	done
	exit $rc
fi
args+=("${files[@]}")
# the output files' folders (test.sh's stage folder does not exist on a
# fresh machine)
for ((i = 0; i < ${#files[@]}; i += 2)); do
	mkdir -p "$(dirname "${files[i + 1]}")"
done

scripts/deps.sh
python=$(scripts/torch-env.sh)
if [ -z "$build" ]; then
	build="build-release"
	scripts/build.sh "$build" --buildtype=release -Dtests=disabled \
		-Dpython="$python" >/dev/null
fi
build=$(realpath "$build")
if [ ! -f "$build/torch_vnpu/__init__.py" ]; then
	echo "torch-suite: $build has no torch_vnpu (PyTorch not found" \
		"when it was configured?)" >&2
	exit 1
fi

# ---- the test files of the installed PyTorch --------------------------------
# They come from Debian's source package of python3-torch, so the PyTorch
# must be Debian's (Debian 13's 2.6). A pip wheel's (Debian 12's venv of
# torch-env.sh) has no source package here to take them from.
if ! "$python" -c 'import torch, sys; sys.exit(not torch.__file__.startswith("/usr/lib/python3/"))'; then
	echo "torch-suite: SKIP: $python's PyTorch is not Debian's python3-torch," \
		"whose source package carries the test files: run it on Debian 13" >&2
	for ((i = 0; i < ${#files[@]}; i += 2)); do
		[ "${files[i]}" != --results ] ||
			echo '{"name": "torch-suite/run", "result": "SKIP"}' >"${files[i + 1]}"
	done
	exit 77
fi
# The source package the installed python3-torch was built from, and the
# checksum of its orig tarball as the archive lists it.
read -r src_pkg src_ver < <(dpkg-query -W \
	-f='${source:Package} ${source:Version}\n' python3-torch 2>/dev/null) ||
	true
if [ -z "${src_ver:-}" ]; then
	echo "torch-suite: python3-torch is not installed" >&2
	exit 1
fi
# The orig tarball and its checksum in the stanza of that version.
orig_of() {
	apt-cache showsrc "$src_pkg" 2>/dev/null |
		awk -v want="$src_ver" '/^Version: /{v=$2} /^Checksums-Sha256:/{s=1; next}
		     /^[^ ]/{s=0}
		     s && v == want && $3 ~ /orig\.tar\.xz$/ {print $3, $1; exit}'
}
read -r tarball tar_sha < <(orig_of) || true
if [ -z "${tarball:-}" ]; then
	# the release's deb-src (scripts/lib/apt.sh) lists the source package
	ensure_backports
	read -r tarball tar_sha < <(orig_of) || true
fi
if [ -z "${tarball:-}" ]; then
	echo "torch-suite: apt knows no source of $src_pkg $src_ver" >&2
	exit 1
fi

fetch_orig "$src_pkg" "$src_ver" "$cache/src" "$tarball" "$tar_sha" || exit 1
tests=$cache/pytorch-tests-${tar_sha:0:16}
if [ ! -f "$tests/.complete" ]; then
	log "extracting the test files of $tarball"
	rm -rf "$tests"
	mkdir -p "$tests"
	tar -C "$tests" --strip-components=1 -xJf "$cache/src/$tarball" \
		--wildcards '*/test/*'
	touch "$tests/.complete"
fi
keep_newest 1 "$cache" 'pytorch-tests-*'

# The simulated device gets 4 GiB (default 1 GiB): test_nn's float64
# Transformer and LayerNorm tests need more than 1 GiB of device memory,
# as any device PyTorch's tests run on has. The sim maps it lazily.
PYTHONPATH="$build${PYTHONPATH:+:$PYTHONPATH}" \
	VNPU_BACKEND=${VNPU_BACKEND:-sim} VNPU_FALLBACK=$fallback \
	VNPU_SIM_VRAM_MB=${VNPU_SIM_VRAM_MB:-4096} \
	"$python" tests/torch-suite/run_suite.py --tests "$tests/test" \
	"${args[@]}"
