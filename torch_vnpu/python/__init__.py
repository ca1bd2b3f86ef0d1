# SPDX-License-Identifier: MIT
"""torch_vnpu: PyTorch on the vnpu NPU, through PyTorch's PrivateUse1 key.

    import torch, torch_vnpu
    x = torch.randn(64, 64, device='npu')
    print((x @ x).relu().sum().cpu())

Importing it names PyTorch's PrivateUse1 device 'npu' and makes
torch.npu the device module (torch.cuda's shape: devices, streams,
events, memory, seeds), with tensor.npu(), tensor.is_npu and
module.npu(). The NPU format ops are torch.ops.npu.* and
torch_vnpu.npu_format_cast etc., int8 inference torch_vnpu.npu_int8_matmul
and npu_quantized_linear; ops without an NPU kernel run on PyTorch's CPU
kernels under the VNPU_FALLBACK policy (torch_vnpu.fallback).
docs/torch.md is the guide.
"""
import torch

DEVICE_TYPE = 'npu'

# Before anything else of ours: the extension's kernels and hooks speak
# of the PrivateUse1 device by this name from the start.
if torch._C._get_privateuse1_backend_name() != DEVICE_TYPE:
    torch.utils.rename_privateuse1_backend(DEVICE_TYPE)

from . import _C  # noqa: E402
from . import npu  # noqa: E402

torch._register_device_module(DEVICE_TYPE, npu)
# tensor.npu(), tensor.is_npu, module.npu(), storage.npu(), ... (the
# storage methods are what torch.load's map_location needs)
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True,
    for_storage=True)

from .fallback import fallback_report, print_fallback_report, \
    reset_fallback_report, set_fallback_policy, fallback_policy, \
    rejected_inputs  # noqa: E402
from .formats import npu_format_cast, npu_format_cast_, get_npu_format, \
    empty_with_format, FORMATS  # noqa: E402
from .quantized import npu_int8_matmul, npu_quantized_linear  # noqa: E402


def device(index=None):
    """torch.device of npu `index` (the current device when None)."""
    if index is None:
        index = _C.current_device()
    return torch.device(DEVICE_TYPE, index)


__all__ = ['device', 'npu', 'DEVICE_TYPE', 'fallback_report', 'rejected_inputs',
           'print_fallback_report', 'reset_fallback_report',
           'set_fallback_policy', 'fallback_policy', 'npu_format_cast',
           'npu_format_cast_', 'get_npu_format', 'empty_with_format',
           'FORMATS', 'npu_int8_matmul', 'npu_quantized_linear']
