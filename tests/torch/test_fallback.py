# SPDX-License-Identifier: MIT
"""The CPU fallback: correct for views, in-place and out= ops, tensor
lists and optional tensors; the VNPU_FALLBACK policy; the report."""
import os
import subprocess
import sys

import pytest
import torch

import torch_vnpu
from conftest import NPU, assert_same

pytestmark = pytest.mark.skipif(
    os.environ.get('VNPU_FALLBACK', 'allow') == 'error',
    reason='tests of the fallback itself')


def report():
    return dict(torch_vnpu.fallback_report())


def test_functional_op_without_npu_kernel():
    c = torch.randn(4, 5)
    n = c.to(NPU)
    assert_same(torch.lgamma(n), torch.lgamma(c))
    assert report().get('aten::lgamma.out', 0) + report().get('aten::lgamma', 0) >= 1


def test_inplace_and_out_ops_write_the_npu_tensor():
    c = torch.randn(4, 5)
    n = c.to(NPU)
    p = n.data_ptr()
    n.lgamma_()
    c.lgamma_()
    assert n.data_ptr() == p
    assert_same(n, c)
    out = torch.empty(0, device=NPU)
    r = torch.lgamma(n, out=out)
    assert r is out
    assert_same(out, torch.lgamma(c))
    # an in-place op on a view writes through to the base
    cb, nb = torch.randn(4, 5), None
    nb = cb.to(NPU)
    nb[1].exp_()   # exp_ has an npu kernel; erfinv_ does not
    nb[2].erfinv_()
    cb[1].exp_()
    cb[2].erfinv_()
    assert_same(nb, cb)


def test_tensor_lists_and_optional_tensors():
    xs = [torch.randn(3, 4) for _ in range(3)]
    ns = [x.to(NPU) for x in xs]
    assert_same(torch.stack(ns, 1), torch.stack(xs, 1))
    # index_put_ takes Tensor?[] indices
    c = torch.zeros(5, 4)
    n = c.to(NPU)
    idx = torch.tensor([0, 3])
    c.index_put_((idx,), torch.ones(2, 4))
    n.index_put_((idx.to(NPU),), torch.ones(2, 4, device=NPU))
    assert_same(n, c)
    # multiple returns
    cv, ci = torch.sort(xs[0], 1)
    nv, ni = torch.sort(ns[0], 1)
    assert_same(nv, cv)
    assert_same(ni, ci)


def test_float64_matmul_falls_back_and_stays_float64():
    c = torch.randn(3, 3, dtype=torch.float64)
    n = c.to(NPU)
    assert n.dtype == torch.float64
    torch_vnpu.reset_fallback_report()
    assert_same(n @ n, c @ c)
    assert report().get('aten::mm', 0) == 1


def test_report_counts_calls():
    torch_vnpu.reset_fallback_report()
    n = torch.randn(4, device=NPU)
    for _ in range(3):
        torch.erfinv(n)
    r = report()
    assert sum(v for k, v in r.items() if 'erfinv' in k) == 3
    torch_vnpu.reset_fallback_report()
    assert report() == {}


def run_py(code, policy, extra_env=None):
    env = dict(os.environ, VNPU_FALLBACK=policy, **(extra_env or {}))
    return subprocess.run([sys.executable, '-c', code], env=env,
                          capture_output=True, text=True, timeout=300)


CODE = ('import torch, torch_vnpu\n'
        'n = torch.randn(4, device="npu")\n'
        'torch.erfinv(n); torch.erfinv(n)\n'
        'print("done", torch.relu(n).device)\n')


def test_policy_allow_warn_error_from_the_environment():
    r = run_py(CODE, 'allow')
    assert r.returncode == 0 and 'done' in r.stdout and 'CAUTION' not in r.stderr
    r = run_py(CODE, 'warn')
    assert r.returncode == 0 and 'done' in r.stdout
    assert r.stderr.count("The operator 'aten::erfinv") == 1      # once per op
    r = run_py(CODE, 'error')
    assert r.returncode != 0
    assert "The operator 'aten::erfinv" in r.stderr and 'VNPU_FALLBACK=error' in r.stderr
    r = run_py(CODE, 'allow', {'VNPU_FALLBACK_REPORT': '1'})
    assert r.returncode == 0 and 'CPU fallback:' in r.stderr and 'erfinv' in r.stderr


def test_policy_error_still_runs_npu_kernels():
    torch_vnpu.set_fallback_policy('error')
    n = torch.randn(8, 8, device=NPU)
    (n @ n).relu().sum().cpu()
    with pytest.raises(RuntimeError, match='CPU fallback is disabled'):
        torch.erfinv(n)
    with pytest.raises(ValueError):
        torch_vnpu.set_fallback_policy('sometimes')


def test_rejected_inputs_are_not_fallbacks():
    # mm with mismatched shapes: the npu kernel leaves the input to
    # PyTorch's CPU kernel for its wording of the error
    torch_vnpu.reset_fallback_report()
    with pytest.raises(RuntimeError, match='cannot be multiplied'):
        torch.ones(2, 3, device=NPU) @ torch.ones(2, 3, device=NPU)
    assert report() == {}
    assert dict(torch_vnpu.rejected_inputs()) == {'aten::mm': 1}


def kernel_kinds(op, key):
    """How op's kernel for key is registered, as PyTorch's dispatcher
    dumps it: 'boxed unboxed' for a typed kernel (PyTorch prints 'boxed'
    alone for every op that returns a tuple)."""
    for line in torch._C._dispatch_dump(op).splitlines():
        if line.startswith(key + ':'):
            return line.rsplit('[', 1)[1].strip(' ]')
    return None


def test_functional_npu_ops_have_typed_kernels():
    # the hot path takes C++ arguments, as PyTorch's own CPU kernels do,
    # not PyTorch's boxed stack
    for op in ('aten::add.Tensor', 'aten::mm', 'aten::relu',
               'aten::native_layer_norm', 'aten::sum.dim_IntList'):
        assert kernel_kinds(op, 'PrivateUse1') == kernel_kinds(op, 'CPU'), op
    assert kernel_kinds('aten::add.Tensor', 'PrivateUse1') == 'boxed unboxed'
    # ops that write an argument stay boxed
    assert kernel_kinds('aten::fill_.Scalar', 'PrivateUse1') == 'boxed'


def test_typed_kernels_leave_what_the_npu_cannot_take_to_the_cpu():
    torch_vnpu.reset_fallback_report()
    # a dtype the dispatcher lacks
    c = torch.arange(-6, 6).to(torch.complex64).reshape(3, 4)
    n = c.to(NPU)
    assert_same(n + n, c + c)
    assert report().get('aten::add.Tensor', 0) == 1
    # a kernel that defers to the CPU (float64 on the matrix units)
    d = torch.randn(3, 3, dtype=torch.float64)
    assert_same(torch.mm(d.to(NPU), d.to(NPU)), torch.mm(d, d))
    # a complex alpha: PyTorch's own error, from its CPU kernel
    x = torch.randn(3, device=NPU)
    with pytest.raises(RuntimeError, match='alpha must not be a complex'):
        torch.add(x, x, alpha=1j)
    # arguments of PyTorch's schema the dispatcher's leaves out
    s = torch.randn(4, 5)
    assert_same(torch.sum(s.to(NPU), 1, dtype=torch.float32),
                torch.sum(s, 1, dtype=torch.float32))
