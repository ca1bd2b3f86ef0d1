# SPDX-License-Identifier: MIT
"""Bad input gets PyTorch's exception and message, never a crash; a
failure below names the op."""
import pytest
import torch
import torch.nn.functional as F

import torch_vnpu
from conftest import NPU


def n(*shape):
    return torch.ones(*shape, device=NPU)


def test_shape_errors_word_as_pytorch():
    with pytest.raises(RuntimeError, match=r'mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)'):
        n(2, 3) @ n(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        n(2, 3).view(4)
    with pytest.raises(IndexError, match='Dimension out of range'):
        n(2, 3).sum(5)
    with pytest.raises(RuntimeError, match='Sizes of tensors must match'):
        torch.cat([n(2, 3), n(2, 4)])
    with pytest.raises(RuntimeError, match='The size of tensor a'):
        n(2, 3) + n(4)


def test_tensors_of_two_devices():
    for f in (lambda: n(2, 3) + torch.ones(2, 3), lambda: n(2, 3) @ torch.ones(3, 2),
              lambda: torch.bmm(n(1, 2, 3), torch.ones(1, 3, 2)),
              lambda: torch.addmm(n(2), n(2, 3), torch.ones(3, 2))):
        with pytest.raises(RuntimeError, match='Expected all tensors to be on the same device'):
            f()
    # a 0-dim CPU tensor is a scalar, as for CUDA
    assert (n(2) + torch.tensor(1.)).cpu().tolist() == [2, 2]


def test_index_tensors_of_another_device():
    # the ops whose CUDA kernel checks that every tensor argument is on one
    # device (not TensorIterator's, no CPU scalar excepted), each given a
    # CPU tensor beside npu ones, this way round and the other
    i = torch.tensor([0, 2])
    j = torch.tensor([[0, 1, 2, 0]] * 3)
    m = torch.ones(3, 4, dtype=torch.bool)
    calls = {
        'index_select': lambda x, i, j, m: x.index_select(0, i),
        'gather': lambda x, i, j, m: x.gather(1, j),
        'scatter': lambda x, i, j, m: x.scatter(1, j, 2.0),
        'scatter_add': lambda x, i, j, m: x.scatter_add(1, j, x),
        'index_add': lambda x, i, j, m: x.index_add(0, i, x[:2].clone()),
        'index_copy': lambda x, i, j, m: x.index_copy(0, i, x[:2].clone()),
        'masked_fill': lambda x, i, j, m: x.masked_fill(m, 1.0),
        'masked_select': lambda x, i, j, m: x.masked_select(m),
        'embedding': lambda x, i, j, m: F.embedding(i, x),
        'cross_entropy': lambda x, i, j, m: F.cross_entropy(x[:2], i),
        'cat': lambda x, i, j, m: torch.cat([x, x.new_ones(1, 4).to(i.device)]),
    }
    x = n(3, 4)
    for name, f in calls.items():
        for args in ((x, i, j, m), (x.cpu(), i.to(NPU), j.to(NPU), m.to(NPU))):
            with pytest.raises(RuntimeError, match='Expected all tensors to be on the same device'):
                f(*args)
        f(x, i.to(NPU), j.to(NPU), m.to(NPU))   # one device: computes
    # what CUDA takes from the CPU: advanced indexing's indices, a 0-dim
    # value, a copy's source
    x[i] = torch.tensor(5.)
    assert x[i].cpu().tolist() == [[5] * 4] * 2
    assert x.index_put_((i,), torch.tensor(6.))[i].sum().item() == 48
    assert x.copy_(torch.zeros(3, 4)).sum().item() == 0


def test_out_of_memory_is_pytorchs_oom_error():
    with pytest.raises(RuntimeError, match='too large|out of memory|allocating'):
        torch.empty(1 << 40, device=NPU)
    assert (n(3) * 2).cpu().tolist() == [2, 2, 2]     # and nothing broke


def test_bad_values_name_the_op():
    with pytest.raises(RuntimeError, match='npu::npu_format_cast: unsupported format 7'):
        torch_vnpu.npu_format_cast(n(3), 7)
    with pytest.raises(ValueError, match='unknown npu format'):
        torch_vnpu.npu_format_cast(n(3), 'NHWC8')
    with pytest.raises(RuntimeError, match='negative dimension'):
        torch.ops.npu.empty_with_format([-1], device=NPU)
    with pytest.raises(RuntimeError, match='the device must be an npu'):
        torch.ops.npu.empty_with_format([2], device='cpu')
    with pytest.raises(RuntimeError, match='not a view'):
        torch_vnpu.npu_format_cast_(n(4, 4)[1:], 'FRACTAL_NZ')
    with pytest.raises(IndexError, match='Target 5 is out of bounds'):
        F.nll_loss(n(2, 3), torch.tensor([0, 5], device=NPU))


# Calls PyTorch refuses on every device, each with an op on the NPU and ops
# that fall back to the CPU (index_select, softmax on a bad dim, ...).
INVALID_CALLS = {
    'mm shapes': lambda d: torch.ones(2, 3, device=d) @ torch.ones(2, 3, device=d),
    'nll_loss target': lambda d: F.nll_loss(
        torch.ones(2, 3, device=d), torch.tensor([0, 5], device=d)),
    'cross_entropy target': lambda d: F.cross_entropy(
        torch.ones(2, 3, device=d), torch.tensor([0, 3], device=d)),
    'cat sizes': lambda d: torch.cat([torch.ones(2, 3, device=d),
                                      torch.ones(2, 4, device=d)]),
    'index_select index': lambda d: torch.ones(3, device=d).index_select(
        0, torch.tensor([7], device=d)),
    'embedding index': lambda d: F.embedding(
        torch.tensor([9], device=d), torch.ones(3, 4, device=d)),
    'gather index': lambda d: torch.ones(3, device=d).gather(
        0, torch.tensor([5], device=d)),
    'softmax dim': lambda d: torch.ones(2, 3, device=d).softmax(5),
    'sum dim': lambda d: torch.ones(2, 3, device=d).sum(4),
    'add shapes': lambda d: torch.ones(2, 3, device=d) + torch.ones(4, device=d),
    'view size': lambda d: torch.ones(2, 3, device=d).view(5),
    'conv channels': lambda d: F.conv2d(torch.ones(1, 3, 5, 5, device=d),
                                        torch.ones(4, 2, 3, 3, device=d)),
    'bmm batch': lambda d: torch.bmm(torch.ones(2, 2, 3, device=d),
                                     torch.ones(3, 3, 2, device=d)),
    'layer_norm shape': lambda d: F.layer_norm(torch.ones(2, 3, device=d), (4,)),
    'index_add_ index': lambda d: torch.zeros(3, device=d).index_add_(
        0, torch.tensor([4], device=d), torch.ones(1, device=d)),
}


@pytest.mark.parametrize('policy', ['allow', 'error'])
@pytest.mark.parametrize('case', INVALID_CALLS)
def test_invalid_arguments_raise_pytorchs_error_in_every_policy(case, policy):
    """Not a missing op: PyTorch's exception type and message, whether the
    op runs on the NPU, falls back, or the fallback is refused."""
    f = INVALID_CALLS[case]
    with pytest.raises(Exception) as want:
        f('cpu')
    torch_vnpu.set_fallback_policy(policy)
    with pytest.raises(type(want.value)) as got:
        f(NPU)
        torch.npu.synchronize()
    assert str(want.value).splitlines()[0] in str(got.value)


def test_refused_fallback_changes_nothing():
    """Under 'error' a valid call of an op the NPU lacks is refused after
    its arguments were checked on the CPU: the npu tensors it would write
    and the random state stay as they were."""
    t = torch.zeros(3, device=NPU)
    torch_vnpu.set_fallback_policy('error')
    with pytest.raises(RuntimeError, match='index_fill'):
        t.index_fill_(0, torch.tensor([1], device=NPU), 1.0)
    assert t.cpu().tolist() == [0, 0, 0]
    torch.manual_seed(7)
    want = torch.rand(4)
    torch.manual_seed(7)
    with pytest.raises(RuntimeError, match='poisson'):
        torch.poisson(torch.full((1000,), 3.0, device=NPU))
    assert torch.equal(torch.rand(4), want)
    g = torch.Generator().manual_seed(3)
    want = torch.rand(4, generator=torch.Generator().manual_seed(3))
    with pytest.raises(RuntimeError, match='poisson'):
        torch.poisson(torch.full((1000,), 3.0, device=NPU), generator=g)
    assert torch.equal(torch.rand(4, generator=g), want)


def test_dtypes_the_device_lacks():
    # a float64 matmul (the matrix units have no float64) and complex run
    # on PyTorch's CPU kernels under 'allow' ...
    d = torch.ones(3, 3, dtype=torch.float64, device=NPU)
    assert (d @ d).dtype == torch.float64
    s = torch.ones(3, dtype=torch.complex64, device=NPU)
    assert (s + s).cpu().tolist() == [2, 2, 2]
    # ... and are refused, naming the op, under 'error'; float64
    # elementwise ops run on the device's vector unit
    torch_vnpu.set_fallback_policy('error')
    with pytest.raises(RuntimeError, match="'aten::mm' is not currently implemented for the npu"):
        d @ d
    with pytest.raises(RuntimeError, match="CPU fallback is disabled"):
        s + s
    assert (d * 2).sum().item() == 18


def test_inputs_that_crash_pytorchs_own_cpu_kernels_do_not_reach_them():
    # group_norm of an empty batch decomposes into a batch_norm over zero
    # channels, on which 1.13's CPU kernel divides by zero (SIGFPE)
    x = torch.zeros(0, 2)
    r = F.group_norm(x.to(NPU), 1, torch.ones(2).to(NPU), torch.zeros(2).to(NPU))
    assert r.shape == (0, 2)


def test_hostile_arguments_do_not_crash():
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)):
        n(2, 2).as_strided((2, 2), (1 << 40, 1))
    with pytest.raises(RuntimeError):
        n(2, 2).as_strided((2,), (1,), -1)
    with pytest.raises(RuntimeError):
        torch.empty(-1, device=NPU)
    with pytest.raises(IndexError):
        torch_vnpu._C.set_device(1 << 40)
    with pytest.raises(RuntimeError):
        torch_vnpu._C.event_elapsed_time(0, 0)
    # beyond the dispatcher's 8 dims, PyTorch's CPU kernels run it
    assert (n(*([1] * 9)) + 1).sum().item() == 2
    big = torch.arange(2. ** 10).view([2] * 10)
    assert torch.equal((big.to(NPU).transpose(0, 9) * 2).cpu(),
                       big.transpose(0, 9) * 2)
    # a string with a NUL inside is not the string before it: PyTorch's
    # own check refuses it, as on the CPU
    for bad in ('none\0x', 'tanh\0'):
        with pytest.raises(RuntimeError, match='either none or tanh'):
            F.gelu(n(3), approximate=bad)


def test_bool_alpha_only_for_bool_results():
    # PyTorch's alpha_check (found by TestBinaryUfuncs.test_add/test_sub)
    m = torch.tensor([1, 2], dtype=torch.int8, device=NPU)
    for f in (lambda: torch.add(m, m, alpha=True),
              lambda: torch.sub(m, m, alpha=True),
              lambda: m.add_(m, alpha=True)):
        with pytest.raises(RuntimeError, match='Boolean alpha only supported'):
            f()
    b = torch.tensor([True, False], device=NPU)
    assert torch.equal(torch.add(b, b, alpha=True).cpu(),
                       torch.tensor([True, False]))


def test_dtypes_pytorch_has_no_kernel_for():
    # bool addcmul: PyTorch's CPU kernel has none, so the npu refuses it
    # too, even though the device's BINARY computes bool (found by
    # TestCommon.test_dtypes_addcmul in a fresh run)
    # (PyTorch 2.13 raises NotImplementedError, a RuntimeError; 2.6
    # RuntimeError itself)
    t = torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.addcmul(t, t, t, value=3)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.addcmul(t.to(NPU), t.to(NPU), t.to(NPU), value=3)


def test_reduction_out_has_the_dtype_argument():
    # a structured reduction given dtype= checks its out= has it exactly
    # (found by PyTorch 2.6's error_inputs of mean in the OpInfo harness)
    x = n(3, 4)
    o = n(4)
    o0 = torch.empty([], device=NPU)
    for f in (lambda: torch.sum(x, [0], dtype=torch.float64, out=o),
              lambda: torch.ops.aten.sum.out(x, dtype=torch.float64, out=o0),
              lambda: torch.mean(x, [0], dtype=torch.float64, out=o),
              lambda: torch.ops.aten.mean.dtype_out(x, dtype=torch.float64, out=o0),
              lambda: torch.prod(x, 0, dtype=torch.float64, out=o),
              lambda: torch.ops.aten.prod.out(x, dtype=torch.float64, out=o0),
              lambda: torch.linalg.vector_norm(x, 2, [0], dtype=torch.float64, out=o),
              lambda: torch.mean(x.long(), [0], dtype=torch.float64, out=o)):
        with pytest.raises(RuntimeError,
                           match='Expected out tensor to have dtype double, but got float instead'):
            f()
    # without dtype= the out= sets the dtype
    r = torch.empty(4, dtype=torch.float64, device=NPU)
    torch.sum(x, [0], out=r)
    assert r.dtype == torch.float64 and r.cpu().tolist() == [3.0] * 4


def test_reduction_out_sets_the_dtype_it_computes_in():
    # sum(x, out=o) is sum(x, dtype=o.dtype): a float input summed into an
    # int64 out= is cast first, as PyTorch's meta functions do (cumsum and
    # cumprod too; found by 2.6's TestCommon.test_out, whose expected
    # failure ours passed); mean refuses an integral out= by the cast rule
    x = torch.tensor([0.5, 1.5, 2.5, 3.5])
    for f in (lambda t, o: torch.sum(t, 0, out=o), lambda t, o: torch.prod(t, 0, out=o),
              lambda t, o: torch.cumsum(t, 0, out=o), lambda t, o: torch.cumprod(t, 0, out=o)):
        want, got = torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long, device=NPU)
        f(x, want)
        f(x.to(NPU), got)
        assert got.dtype == torch.long and torch.equal(got.cpu(), want)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.mean(x.to(NPU), 0, out=torch.empty(0, dtype=torch.long, device=NPU))
    # linalg_vector_norm's out= has the result's dtype exactly
    with pytest.raises(RuntimeError,
                       match='Expected out tensor to have dtype float, but got double instead'):
        torch.linalg.vector_norm(x.to(NPU), out=torch.empty(0, dtype=torch.float64, device=NPU))


def test_out_overlapping_an_input_after_its_resize():
    # gather's out= shares no memory with self at all, and none partly with
    # the index once resized (PyTorch's gather checks after its meta
    # function resized the out=; found by 2.6's TestCommon.test_errors)
    src = torch.rand(6, device=NPU)
    ind = torch.tensor([2, 1, 0], device=NPU)
    with pytest.raises(RuntimeError, match='unsupported operation'):
        torch.gather(src, 0, ind, out=src)
    with pytest.raises(RuntimeError, match='unsupported operation'):
        torch.gather(ind.clone(), 0, ind[1:], out=ind[:1])
    assert ind.cpu().tolist() == [2, 1, 0]


def test_integer_dtypes_pytorch_refuses():
    # max_pool2d's backward and topk of bool have no PyTorch kernel: the
    # npu refuses them too (found by 2.6's TestCommon.test_dtypes)
    x = torch.ones(1, 4, 4, dtype=torch.long, device=NPU)
    y, i = torch.ops.aten.max_pool2d_with_indices(x, [2, 2])
    with pytest.raises(RuntimeError, match="\"max_pool2d_backward\" not implemented for 'Long'"):
        torch.ops.aten.max_pool2d_with_indices_backward(y, x, [2, 2], [2, 2], [0, 0], [1, 1],
                                                        False, i)
    for b in (torch.tensor(True, device=NPU), torch.tensor([True, False], device=NPU)):
        with pytest.raises(RuntimeError, match='topk does not support bool'):
            torch.topk(b, 1)
