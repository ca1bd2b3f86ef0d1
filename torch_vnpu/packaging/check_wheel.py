# SPDX-License-Identifier: MIT
"""Checks of an installed torch_vnpu, shared by scripts/package.sh and the
clean-root package test (tests/package/in-root.sh).

    check_wheel.py pin WHEEL       prints the torch version WHEEL requires
                                   (its Requires-Dist: torch==VERSION)
    check_wheel.py computes PREFIX imports torch_vnpu, which must come from
                                   under PREFIX (the installed package, not
                                   a checkout), and computes on the npu
                                   against the CPU
"""
import sys
import zipfile


def pin(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist()
                    if n.endswith('.dist-info/METADATA'))
        for line in z.read(meta).decode().splitlines():
            if line.startswith('Requires-Dist: torch=='):
                print(line.split('==', 1)[1])
                return 0
    print('%s names no torch==VERSION' % wheel, file=sys.stderr)
    return 1


def computes(prefix):
    import torch
    import torch_vnpu

    if not torch_vnpu.__file__.startswith(prefix):
        print('torch_vnpu from %s, not from under %s' % (
            torch_vnpu.__file__, prefix), file=sys.stderr)
        return 1
    a = torch.randn(64, 32)
    b = torch.randn(32, 16)
    got = (torch.relu(a.to('npu') @ b.to('npu')) + 1).cpu()
    want = torch.relu(a @ b) + 1
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
        print('wrong result: %g off' % (got - want).abs().max(),
              file=sys.stderr)
        return 1
    print('torch_vnpu from', torch_vnpu.__file__, 'with torch',
          torch.__version__)
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == 'pin':
        return pin(argv[2])
    if len(argv) == 3 and argv[1] == 'computes':
        return computes(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
