#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds an example against the uninstalled vnpurt.pc, the way a program
# outside the tree would, and runs it.
#   out_of_tree.sh CC SOURCE PKG_CONFIG_DIR OUTPUT [EXTRA_CFLAGS...]
set -eu
cc=$1
src=$2
export PKG_CONFIG_PATH=$3
out=$4
shift 4

flags=$(pkg-config --cflags --libs vnpurt)
echo "$cc $src $flags $* -o $out"
# shellcheck disable=SC2086 # flags are words on purpose
"$cc" "$src" $flags "$@" -o "$out"

# The uninstalled library is not on the loader's path: take its -L dirs.
libdirs=$(pkg-config --libs-only-L vnpurt | sed 's/-L//g; s/ /:/g')
LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$out"
