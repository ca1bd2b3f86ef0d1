# SPDX-License-Identifier: MIT
"""Shared helpers of torch_vnpu's tests (run by meson's 'torch' suite with
PYTHONPATH at the build tree)."""
import os
import sys

import pytest
import torch

import torch_vnpu

NPU = torch.device('npu', 0)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

# What the device's f16/bf16 kernels and PyTorch's CPU kernels may differ
# by: both accumulate in f32 but round intermediate results differently.
TOL = {
    torch.float32: dict(rtol=1.3e-6 * 4, atol=1e-5),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def tol(dtype, scale=1.0):
    t = TOL.get(dtype, dict(rtol=0, atol=0))
    return dict(rtol=t['rtol'] * scale, atol=t['atol'] * scale)


def assert_same(npu_value, cpu_value, scale=1.0):
    """npu_value (tensor(s) on the npu) equals PyTorch's CPU result."""
    if isinstance(cpu_value, (tuple, list)):
        assert len(npu_value) == len(cpu_value)
        for a, b in zip(npu_value, cpu_value):
            assert_same(a, b, scale)
        return
    if not isinstance(cpu_value, torch.Tensor):
        assert npu_value == cpu_value
        return
    assert npu_value.device.type == 'npu', npu_value.device
    got = npu_value.cpu()
    assert got.dtype == cpu_value.dtype
    assert got.shape == cpu_value.shape
    torch.testing.assert_close(got, cpu_value, equal_nan=True,
                               **tol(cpu_value.dtype, scale))


def gen_ops_module():
    sys.path.insert(0, os.path.join(ROOT, 'dispatcher', 'codegen'))
    import gen_ops
    return gen_ops


def yaml_ops():
    g = gen_ops_module()
    return [g.Op(e) for e in g.parse_yaml(
        os.path.join(ROOT, 'dispatcher', 'ops', 'native_functions.yaml'))]


# VNPU_FALLBACK=error runs the suite with every fallback refused: what
# fails then is what does not run on the npu.
POLICY = os.environ.get('VNPU_FALLBACK', 'allow')


@pytest.fixture(autouse=True)
def _default_policy():
    """Every test starts with the session's policy and an empty report."""
    torch_vnpu.set_fallback_policy(POLICY)
    torch_vnpu.reset_fallback_report()
    yield
    torch_vnpu.set_fallback_policy(POLICY)
