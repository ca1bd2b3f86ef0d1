#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A shared library exports exactly the functions its public headers declare.

    check_exports.py --cc GCC --lib LIB.so [-I DIR ...] HEADER...

The declarations come from GCC's -aux-info (the compiler's own list of every
prototype it saw, so no header parsing of ours is involved), the exports
from nm -D. A function declared but not exported is a link error waiting for
a user; one exported but not declared is ABI nobody promised. Both fail.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def declared(cc, headers, include_dirs):
    wanted = {os.path.realpath(h) for h in headers}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "all.c")
        aux = os.path.join(tmp, "aux.txt")
        with open(src, "w") as f:
            for h in headers:
                f.write(f'#include "{os.path.realpath(h)}"\n')
        cmd = [cc, "-std=c11", "-fsyntax-only", "-aux-info", aux, src]
        cmd += [f"-I{d}" for d in include_dirs]
        if subprocess.run(cmd).returncode != 0:
            sys.exit(f"{cc} could not compile the headers")
        names = set()
        with open(aux) as f:
            for line in f:
                m = re.match(r"/\* (.*):\d+:\w+ \*/ (.*)", line)
                if not m or os.path.realpath(m.group(1)) not in wanted:
                    continue
                decl = m.group(2)
                if decl.startswith("static "):
                    continue  # inline in the header, not a symbol
                name = re.search(r"(\w+) \(", decl)
                if name:
                    names.add(name.group(1))
        return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    funcs, other = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        kind, name = parts[1], parts[2].split("@")[0]
        if kind == "A":
            continue  # the version node itself
        (funcs if kind in "Ti" else other).add(name)
    return funcs, other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("-I", dest="include_dirs", action="append", default=[])
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()

    decl = declared(args.cc, args.headers, args.include_dirs)
    funcs, other = exported(args.lib)
    bad = False
    for name in sorted(decl - funcs):
        print(f"declared but not exported: {name}")
        bad = True
    for name in sorted(funcs - decl):
        print(f"exported but not declared: {name}")
        bad = True
    for name in sorted(other):
        print(f"exported data, not part of the ABI: {name}")
        bad = True
    lib = os.path.basename(args.lib)
    print(f"{lib}: {len(funcs)} functions exported, {len(decl)} declared")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
