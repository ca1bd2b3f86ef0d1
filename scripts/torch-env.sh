#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes ready the Python that torch_vnpu is built and tested with, and
# prints its path (docs/torch.md, "Supported PyTorch"):
#   Debian 12  a virtual environment, .venv in the checkout, on Debian's
#              /usr/bin/python3 (3.11) with the exact pins of
#              torch_vnpu/requirements.txt: PyTorch 2.13.0's CPU build
#              (Debian 12's own PyTorch is 1.13). In the checkout, so
#              that scripts/vm.sh --host-root carries it into the VM.
#   Debian 13  Debian's /usr/bin/python3 with python3-torch (2.6) from
#              apt; no pip.
# With --models, the Python of the real-model tests (tests/torch-models),
# which need torchvision built for their torch:
#   Debian 12  .venv-models, the pins of torch_vnpu/requirements-models.txt
#              (torch 2.14.1 and torchvision 0.29.1)
#   Debian 13  Debian's /usr/bin/python3 with python3-torchvision (0.21)
# Installs only what is missing, so a second run costs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

log() { echo "torch-env: $*" >&2; }

models=0
case ${1:-} in
"") ;;
--models) models=1 ;;
*)
	log "usage: torch-env.sh [--models]"
	exit 2
	;;
esac

install_missing() {
	local missing=() p
	for p in "$@"; do
		apt_installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	apt_get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null 2>&1 || {
		apt_get update -qq >/dev/null &&
			apt_get install -y -qq --no-install-recommends \
				"${missing[@]}" >/dev/null
	}
}

release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
case $release in
bookworm)
	install_missing python3 python3-venv python3-dev
	venv=$PWD/.venv
	req=torch_vnpu/requirements.txt
	if [ $models -eq 1 ]; then
		venv=$PWD/.venv-models
		req=torch_vnpu/requirements-models.txt
	fi
	if ! cmp -s "$req" "$venv/.vnpu-requirements" ||
		! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
		log "making $venv with $(grep -m1 '^torch==' "$req")" \
			"(pip, from the machine's package index)"
		rm -rf "$venv"
		/usr/bin/python3 -m venv "$venv"
		# binary wheels only: nothing is built from source here
		"$venv/bin/pip" install -q --no-input --only-binary=:all: \
			-r "$req" >&2
		cp "$req" "$venv/.vnpu-requirements"
	fi
	echo "$venv/bin/python"
	;;
*)
	# Debian 13 and later: Debian's PyTorch 2 (python3-expecttest for
	# PyTorch's test helpers)
	install_missing python3 python3-dev python3-torch libtorch-dev \
		pybind11-dev python3-pytest python3-expecttest
	[ $models -eq 0 ] || install_missing python3-torchvision
	echo /usr/bin/python3
	;;
esac
