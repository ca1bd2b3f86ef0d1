# SPDX-License-Identifier: MIT
"""torch_vnpu: PyTorch on the vnpu NPU, through PyTorch's PrivateUse1 key.

    import torch, torch_vnpu
    x = torch.randn(64, 64, device='privateuseone')   # or torch_vnpu.device()
    print((x @ x).relu().sum().cpu())

PyTorch 1.13 names the device 'privateuseone' (it has no way to rename
it); torch_vnpu.device(i) builds torch.device('privateuseone', i).
torch_vnpu.npu offers what torch.cuda does; the NPU format ops are
torch.ops.npu.* and torch_vnpu.npu_format_cast etc., int8 inference
torch_vnpu.npu_int8_matmul and npu_quantized_linear; ops without an NPU
kernel run on PyTorch's CPU kernels under the VNPU_FALLBACK policy
(torch_vnpu.fallback). docs/torch.md is the guide.
"""
import torch

from . import _C
from . import npu
from . import tensor_methods  # noqa: F401  (Tensor.new on privateuseone)
from .fallback import fallback_report, print_fallback_report, \
    reset_fallback_report, set_fallback_policy, fallback_policy, \
    rejected_inputs
from .formats import npu_format_cast, npu_format_cast_, get_npu_format, \
    empty_with_format, FORMATS
from .quantized import npu_int8_matmul, npu_quantized_linear

DEVICE_TYPE = 'privateuseone'


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
