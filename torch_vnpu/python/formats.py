# SPDX-License-Identifier: MIT
"""NPU memory formats (docs/formats.md), as torch_npu offers them.

A tensor's storage may hold an internal layout (FRACTAL_NZ for matmul
weights, NC1HWC0 for conv activations, FRACTAL_Z for conv weights); its
sizes stay the logical ones, and copies to the CPU, printing and every op
that needs a plain layout convert back on the device.
"""
import torch

from . import _C  # noqa: F401  (registers the npu ops)

FORMATS = {'ND': 2, 'NCHW': 0, 'NC1HWC0': 3, 'FRACTAL_Z': 4,
           'FRACTAL_NZ': 29}


def _fmt(fmt):
    if isinstance(fmt, str):
        if fmt not in FORMATS:
            raise ValueError('unknown npu format %r (one of %s)' %
                             (fmt, ', '.join(FORMATS)))
        return FORMATS[fmt]
    return int(fmt)


def npu_format_cast(tensor, fmt):
    """A copy of tensor whose storage is in npu format fmt (int or name)."""
    return torch.ops.npu.npu_format_cast(tensor, _fmt(fmt))


def npu_format_cast_(tensor, fmt):
    """Casts tensor's storage to fmt in place; returns tensor."""
    return torch.ops.npu.npu_format_cast_(tensor, _fmt(fmt))


def get_npu_format(tensor):
    """The npu format of tensor's storage (2, ND, for CPU tensors)."""
    return torch.ops.npu.get_npu_format(tensor)


def empty_with_format(size, fmt, dtype=None, device=None):
    """An uninitialised npu tensor of logical size whose storage is in fmt."""
    if device is None:
        device = torch.device('npu', _C.current_device())
    return torch.ops.npu.empty_with_format(list(size), dtype=dtype,
                                           device=device,
                                           acl_format=_fmt(fmt))
