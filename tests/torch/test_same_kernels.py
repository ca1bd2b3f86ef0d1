# SPDX-License-Identifier: MIT
"""The C dispatcher and torch_vnpu run the same NPU code: the results of
same_kernels.c (through the dispatcher's C API) and of PyTorch on
npu (through torch_vnpu) for the same ops and inputs agree bit
for bit. The C front end's matmul composite, for every rank pair, is held
to PyTorch's CPU matmul. SAME_KERNELS names the C program (meson passes
it)."""
import os
import struct
import subprocess

import pytest
import torch
import torch.nn.functional as F

import torch_vnpu
from conftest import NPU

DTYPES = {0: torch.uint8, 1: torch.int8, 3: torch.int32, 4: torch.int64,
          5: torch.float16, 6: torch.float32, 7: torch.float64,
          11: torch.bool, 15: torch.bfloat16}

OPS = {
    'mm': lambda a, b: a @ b,
    'addmm': lambda c, a, b: torch.addmm(c, a, b),
    'mm_nz': lambda a, b: a @ torch_vnpu.npu_format_cast(b, 'FRACTAL_NZ'),
    'add': lambda a, b: torch.add(a, b, alpha=0.5),
    'gelu': F.gelu,
    'softmax': lambda x: torch.softmax(x, 1),
    'sum': lambda x: x.sum(1),
    'layer_norm': lambda x, w, b: F.layer_norm(x, (24,), w, b, 1e-5),
    'addcmul': lambda a, b, c: torch.addcmul(a, b, c, value=-0.25),
    'conv2d': lambda x, w, b: F.conv2d(x, w, b, padding=1),
}


def read_cases(data):
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v
    while pos < len(data):
        (n,) = take('<I')
        name = data[pos:pos + n].decode()
        pos += n
        (count,) = take('<I')
        tensors = []
        for _ in range(count):
            dt, nd = take('<iI')
            sizes = take('<%dq' % nd)
            dtype = DTYPES[dt]
            numel = 1
            for s in sizes:
                numel *= s
            nbytes = numel * torch.empty(0, dtype=dtype).element_size()
            raw = bytearray(data[pos:pos + nbytes])
            pos += nbytes
            t = torch.frombuffer(raw, dtype=dtype) if nbytes else \
                torch.empty(0, dtype=dtype)
            tensors.append(t.view(sizes))
        yield name, tensors


def bits(t):
    return t.contiguous().view(torch.uint8)


def test_results_are_bit_identical():
    prog = os.environ.get('SAME_KERNELS')
    if not prog:
        pytest.skip('SAME_KERNELS is not set (meson sets it)')
    out = subprocess.run([prog], capture_output=True, timeout=300,
                         env=dict(os.environ, VNPU_BACKEND='sim'))
    assert out.returncode == 0, out.stderr.decode()
    seen = 0
    torch_vnpu.reset_fallback_report()
    for name, tensors in read_cases(out.stdout):
        *inputs, expect = tensors
        if name.startswith('matmul:'):
            # the C front end's composite against PyTorch's CPU matmul
            torch.testing.assert_close(expect, torch.matmul(*inputs),
                                       rtol=1e-5, atol=1e-5, msg=name)
            seen += 1
            continue
        if name.startswith('ref:cross_entropy:'):
            red, ls, weighted = name.split('/')[0].split(':')[2:]
            want = F.cross_entropy(
                inputs[0], inputs[1], inputs[2] if weighted == '1' else None,
                reduction=('none', 'mean', 'sum')[int(red)],
                ignore_index=-100, label_smoothing=float(ls))
            torch.testing.assert_close(expect, want, rtol=1e-5, atol=1e-6,
                                       msg=name)
            seen += 1
            continue
        got = OPS[name.split('/')[0]](*[x.to(NPU) for x in inputs])
        got = got.cpu()
        assert got.dtype == expect.dtype and got.shape == expect.shape, name
        assert torch.equal(bits(got), bits(expect)), \
            '%s: max difference %g' % (name, (got.float() - expect.float()).abs().max())
        seen += 1
    assert seen == 44
    assert torch_vnpu.fallback_report() == []   # all of it ran on the npu
