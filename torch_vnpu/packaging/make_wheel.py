# SPDX-License-Identifier: MIT
"""Writes the torch_vnpu wheel (PEP 427) from an installed torch_vnpu package.

    python make_wheel.py --pkgdir DIR --version V --out DIR

Run with the Python torch_vnpu was built for (its tags and its torch's
version come from this interpreter). DIR is the installed package directory
(the _C extension and the .py files; meson install --destdir puts it there).
The wheel holds that package and its .dist-info: METADATA with
Requires-Dist torch==<the torch it was built against>, WHEEL, and RECORD
with each file's sha256. The extension's run path is set to $ORIGIN (the
build tree's means nothing elsewhere). Prints the wheel's path. No network, no build
backend: the standard library only.
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import sysconfig
import time
import zipfile

NAME = "torch_vnpu"

DESCRIPTION = """\
torch_vnpu registers the vnpu NPU as PyTorch's PrivateUse1 device ("npu"):
tensors, a caching allocator, streams and events, NPU memory formats, and
the NPU operator library of libvnpudispatch, with CPU fallback for the
operators it does not implement.

This wheel holds the Python package only. Its extension links the system's
libvnpudispatch.so.0, which the Debian package libvnpudispatch0 installs
(with libvnpurt0): install the vnpu Debian packages first. The extension is
built against exactly the torch named in Requires-Dist; install that torch
with it (pip install torch==<that version> torch_vnpu-*.whl).
"""


def tags():
    """(python tag, abi tag, platform tag) of this interpreter."""
    if sys.implementation.name != "cpython":
        sys.exit("make_wheel: CPython only")
    py = "cp%d%d" % sys.version_info[:2]
    abi = py
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        abi += "t"
    if sysconfig.get_config_var("Py_DEBUG"):
        abi += "d"
    plat = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return py, abi, plat


def torch_version():
    """The public part of the torch version (2.13.0 of 2.13.0+cpu)."""
    import torch

    return torch.__version__.split("+")[0]


def neutral_runpath(data):
    """The ELF64 shared object DATA with its DT_RUNPATH/DT_RPATH strings
    overwritten in place with $ORIGIN: a build tree's run path (its
    dispatcher, the build machine's torch/lib) means nothing where the wheel
    is installed; torch's libraries are loaded by import torch, and
    libvnpudispatch.so.0 comes from the system's library path."""
    import struct

    data = bytearray(data)
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("make_wheel: not a little-endian ELF64 object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for sh in sections:
        if sh[1] != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            tag, val = struct.unpack_from("<qQ", data, off)
            if tag == 0:
                break
            if tag in (15, 29):  # DT_RPATH, DT_RUNPATH
                start = strtab[4] + val
                end = data.index(0, start)
                new = b"$ORIGIN"
                if end - start < len(new):
                    new = b""
                data[start:end] = new + bytes(end - start - len(new))
    return bytes(data)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pkgdir", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    py, abi, plat = tags()
    tv = torch_version()
    dist_info = "%s-%s.dist-info" % (NAME, args.version)
    wheel = os.path.join(args.out, "%s-%s-%s-%s-%s.whl" %
                         (NAME, args.version, py, abi, plat))

    files = []  # (archive name, bytes)
    for root, dirs, names in os.walk(args.pkgdir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, n)
            rel = os.path.relpath(path, args.pkgdir).replace(os.sep, "/")
            with open(path, "rb") as f:
                data = f.read()
            if n.endswith(".so"):
                data = neutral_runpath(data)
            files.append(("%s/%s" % (NAME, rel), data))
    if not any(re.match(NAME + r"/_C\..*so$", n) for n, _ in files):
        sys.exit("make_wheel: no _C extension in %s" % args.pkgdir)

    metadata = "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + args.version,
        "Summary: PyTorch backend for the vnpu NPU",
        "License: MIT",
        "Requires-Python: ==%d.%d.*" % sys.version_info[:2],
        "Requires-Dist: torch==" + tv,
        "Description-Content-Type: text/plain",
        "",
        DESCRIPTION,
    ])
    wheel_meta = "\n".join([
        "Wheel-Version: 1.0",
        "Generator: vnpu make_wheel.py",
        "Root-Is-Purelib: false",
        "Tag: %s-%s-%s" % (py, abi, plat),
        "",
    ])
    files.append((dist_info + "/METADATA", metadata.encode()))
    files.append((dist_info + "/WHEEL", wheel_meta.encode()))

    record = "".join("%s,%s,%d\n" % (n, record_hash(d), len(d))
                     for n, d in files)
    record += dist_info + "/RECORD,,\n"
    files.append((dist_info + "/RECORD", record.encode()))

    # Reproducible: fixed times (SOURCE_DATE_EPOCH when set), fixed order.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(args.out, exist_ok=True)
    tmp = wheel + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            info = zipfile.ZipInfo(n, stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = 0o755 if n.endswith(".so") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, d)
    os.replace(tmp, wheel)
    print(wheel)


if __name__ == "__main__":
    main()
