# SPDX-License-Identifier: MIT
"""Views share storage, in-place and out= ops write where PyTorch writes,
copies in every direction, resize_/set_, printing."""
import pytest
import torch

import torch_vnpu
from conftest import NPU, assert_same


def pair(*shape, dtype=torch.float32):
    c = torch.arange(float(torch.Size(shape).numel())).view(shape).to(dtype)
    return c, c.to(NPU)


VIEWS = [
    lambda t: t.view(4, 6),
    lambda t: t.reshape(-1),
    lambda t: t.t(),
    lambda t: t.transpose(0, 1),
    lambda t: t.permute(1, 0),
    lambda t: t[1:3],
    lambda t: t[:, 2],
    lambda t: t.select(0, 2),
    lambda t: t.narrow(1, 1, 3),
    lambda t: t.unsqueeze(1),
    lambda t: t.unsqueeze(0).expand(2, 6, 4),
    lambda t: t.as_strided((3, 3), (5, 1), 2),
    lambda t: t.unfold(1, 2, 2),
    lambda t: t.flatten(),
    lambda t: t.view(2, 3, 4).squeeze(),
    lambda t: t.diagonal(),
    lambda t: t.split(2)[1],
    lambda t: t.chunk(2, 1)[1],
    lambda t: t.unbind(0)[3],
    lambda t: t.view(torch.int32),
]


@pytest.mark.parametrize('i', range(len(VIEWS)))
def test_view_shares_storage_and_matches_cpu(i):
    c, n = pair(6, 4)
    vc, vn = VIEWS[i](c), VIEWS[i](n)
    assert vn.device == NPU
    assert vn.data_ptr() >= n.data_ptr()
    assert vn.storage().data_ptr() == n.storage().data_ptr()
    assert vn.shape == vc.shape and vn.stride() == vc.stride()
    assert_same(vn, vc)
    # a write through the view is seen by the base
    vc.zero_() if vc.dtype.is_floating_point else vc.fill_(0)
    vn.zero_() if vn.dtype.is_floating_point else vn.fill_(0)
    assert_same(n, c)


def test_zero_dim_views():
    c, n = torch.tensor(1.5), torch.tensor(1.5).to(NPU)
    for f in (lambda t: t.view(1, 1), lambda t: t.reshape(-1),
              lambda t: t.flatten(), lambda t: t.unsqueeze(0)):
        assert_same(f(n), f(c))


INPLACE = [
    lambda a, b: a.add_(b),
    lambda a, b: a.add_(b, alpha=2),
    lambda a, b: a.sub_(b),
    lambda a, b: a.mul_(b),
    lambda a, b: a.div_(b + 100),
    lambda a, b: a.relu_(),
    lambda a, b: a.sigmoid_(),
    lambda a, b: a.clamp_(2, 7),
    lambda a, b: a.mul_(3),
    lambda a, b: a[1].add_(b[0]),
    lambda a, b: a.t().mul_(b.t()),
    lambda a, b: a.gt_(b),
    lambda a, b: a.fill_(2),
    lambda a, b: a.zero_(),
    lambda a, b: a.copy_(b.t().contiguous().t()),
]


@pytest.mark.parametrize('i', range(len(INPLACE)))
def test_inplace_writes_self(i):
    ca, na = pair(4, 5)
    cb, nb = pair(4, 5)
    cb, nb = cb * 0.5 - 3, nb * 0.5 - 3
    rc = INPLACE[i](ca, cb)
    rn = INPLACE[i](na, nb)
    assert_same(na, ca)
    assert_same(rn, rc)


def test_inplace_returns_self_and_keeps_storage():
    _, n = pair(4, 5)
    p = n.storage().data_ptr()
    assert n.add_(1) is n and n.mul_(2) is n and n.relu_() is n
    assert n.storage().data_ptr() == p


def test_inplace_refuses_what_pytorch_refuses():
    n = torch.ones(3, dtype=torch.int64, device=NPU)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        n.add_(torch.ones(3, device=NPU))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(3, device=NPU).add_(torch.ones(2, 3, device=NPU))


def test_expanded_tensors():
    c = torch.ones(4).expand(3, 4)
    n = torch.ones(4, device=NPU).expand(3, 4)
    n.zero_()            # allowed, as on the CPU: one location, one value
    c.zero_()
    assert_same(n, c)
    msg = 'more than one element of the written-to tensor refers to a single memory location'
    with pytest.raises(RuntimeError, match=msg):
        c.add_(1)
    with pytest.raises(RuntimeError, match=msg):
        n.add_(1)
    with pytest.raises(RuntimeError, match=msg):
        n.copy_(torch.randn(3, 4))
    # the device saw nothing it had to refuse: later work runs
    assert (torch.ones(2, device=NPU) + 1).cpu().tolist() == [2, 2]
    torch_vnpu.npu.synchronize()


def test_overlapping_views_are_refused_synchronously():
    # the device cannot write a view whose elements overlap; the op says
    # so at once instead of a launch failing at a later synchronisation
    n = torch.zeros(10, device=NPU)
    with pytest.raises(RuntimeError, match='overlap in memory'):
        n.as_strided((3, 3), (1, 1)).copy_(torch.ones(3, 3))
    assert (n + 1).cpu().tolist() == [1] * 10
    torch_vnpu.npu.synchronize()
    # an empty expanded tensor writes nothing, so it is no overlap
    e = torch.empty(0, device=NPU).as_strided((5, 0), (1, 1))
    e.copy_(torch.empty(5, 0))
    assert torch.equal(torch.argwhere(torch.zeros(5, 0).to(NPU)).cpu(),
                       torch.argwhere(torch.zeros(5, 0)))


def test_real_and_imag_are_views():
    # x.real and x.imag are views of x's storage (view_as_real): a write
    # through them changes x, as on the CPU (PyTorch's test_set_real_imag)
    c = torch.randn(6, dtype=torch.complex64)
    n = c.to(NPU)
    for t in (c, n):
        t.real = torch.arange(6.).to(t.device)
        t.imag[1:4] = -1
    assert torch.equal(n.cpu(), c)
    r = torch.view_as_real(n)
    assert r.untyped_storage().data_ptr() == n.untyped_storage().data_ptr()
    assert r.stride() == (2, 1)
    back = torch.view_as_complex(r)
    back[0] = 7 + 7j
    assert n[0].item() == 7 + 7j


def test_complex_lazy_bits_survive_copies():
    c = torch.randn(5, dtype=torch.complex64)
    for t in (c.conj(), c.conj().t() if c.dim() > 1 else c.conj(), torch._neg_view(c)):
        n = t.to(NPU)
        assert torch.equal(n.cpu(), t.resolve_conj().resolve_neg())
    n = c.to(NPU)
    assert torch.equal(n.conj().cpu(), c.conj())
    d = torch.empty(5, dtype=torch.complex64, device=NPU)
    d.conj().copy_(c)              # writing through a conjugate view
    assert torch.equal(d.cpu(), c.conj())
    assert torch.equal(torch.fft.ifft(torch.arange(8.).to(NPU)).cpu(),
                       torch.fft.ifft(torch.arange(8.)))


def test_out_variants():
    ca, na = pair(3, 4)
    cb, nb = pair(4, 2)
    out = torch.empty(3, 2, device=NPU)
    r = torch.mm(na, nb, out=out)
    assert r is out
    assert_same(out, ca @ cb)
    # a wrong-shaped out is resized, as PyTorch does (with its warning)
    out = torch.empty(0, device=NPU)
    torch.add(na, 1, out=out)
    assert_same(out, ca + 1)
    with pytest.warns(UserWarning, match='was resized'):
        torch.mul(na, 2, out=torch.empty(5, device=NPU))
    # multiple outs
    v, i = torch.empty(0, device=NPU), torch.empty(0, dtype=torch.long, device=NPU)
    torch.max(na, 1, out=(v, i))
    cv, ci = torch.max(ca, 1)
    assert_same(v, cv)
    assert_same(i, ci)
    # out of a narrower dtype is refused
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(na, nb.sum(), out=torch.empty(3, 4, dtype=torch.int32,
                                                device=NPU))


def test_out_overlapping_an_input():
    ca, na = pair(3, 4)
    torch.mul(na, na, out=na)
    torch.mul(ca, ca, out=ca)
    assert_same(na, ca)


def test_copies_in_every_direction():
    c = torch.randn(5, 7)
    for dt in (torch.float32, torch.float16, torch.int32, torch.bool):
        n = c.to(NPU, dt)                       # H2D with a cast
        assert_same(n, c.to(dt))
        assert torch.equal(n.cpu(), c.to(dt))    # D2H
        m = torch.empty(5, 7, dtype=dt, device=NPU).copy_(n)   # D2D
        assert_same(m, c.to(dt))
        h = torch.empty(7, 5, dtype=dt).t()
        h.copy_(n)                               # D2H into a strided view
        assert torch.equal(h, c.to(dt))
        d = torch.empty(7, 5, dtype=dt, device=NPU).t()
        d.copy_(c.to(dt))                        # H2D into a strided view
        assert_same(d, c.to(dt))
    # every element size copies on any strides, dtypes the dispatcher
    # lacks (complex) as bytes
    for dt in (torch.float64, torch.int16, torch.complex64):
        h = torch.randn(4, 6).to(dt)
        assert torch.equal(h.to(NPU).t().cpu(), h.t())
        assert torch.equal(h.to(NPU)[:, 1].cpu(), h[:, 1])
        d = torch.empty(6, 4, dtype=dt, device=NPU).t()
        d.copy_(h)
        assert torch.equal(d.cpu(), h)
        assert torch.equal(d.to(torch.float32).cpu(), h.t().t().real.float()
                           if dt.is_complex else h.float())
    x = c.to(NPU)
    x[1:3, 2:5] = torch.ones(2, 3)
    c[1:3, 2:5] = 1
    assert_same(x, c)


def test_copies_to_and_from_meta():
    # the meta device has no data: a copy into it only checks shapes, one
    # out of it is refused (found by PyTorch's test_storage_meta_*: the
    # copy dereferenced the meta tensor's null data pointer)
    for dt in (torch.float32, torch.int16):
        m = torch.ones(4, 5, dtype=dt, device=NPU).to('meta')
        assert m.is_meta and m.shape == (4, 5) and m.dtype == dt
    with pytest.raises(NotImplementedError, match='meta tensor'):
        torch.ones(3, device=NPU).copy_(torch.ones(3, device='meta'))
    with pytest.raises(RuntimeError):
        torch.ones(3, device='meta').copy_(torch.ones(4, device=NPU))


def test_non_blocking_copies_complete_before_use():
    c = torch.randn(256, 256)
    p = c.pin_memory()
    assert p.is_pinned()
    n = p.to(NPU, non_blocking=True)
    # into pageable memory a non_blocking D2H completes before returning
    # (as CUDA's): no synchronize needed
    back = torch.empty(256, 256)
    back.copy_(n, non_blocking=True)
    assert not back.is_pinned() and torch.equal(back, c)
    # into pinned memory it is queued; the stream's synchronisation ends it
    h = torch.empty(256, 256).pin_memory()
    h.copy_(n * 2, non_blocking=True)
    torch_vnpu.npu.current_stream().synchronize()
    assert torch.equal(h, c * 2)
    # PyTorch 2's .to('cpu', non_blocking=True) of a PrivateUse1 (or CUDA)
    # tensor allocates pinned memory (_to_copy), so it is queued too
    # (1.13 returned pageable memory, complete)
    back = (n * 3).to('cpu', non_blocking=True)
    assert back.is_pinned()
    torch_vnpu.npu.current_stream().synchronize()
    assert torch.equal(back, c * 3)


def test_resize_of_internal_formats():
    # torch_npu's rule: resize as the ND contents would (the elements in
    # row-major order keep their values), keep the format where the new
    # shape has a layout in it, else become ND
    c = torch.arange(35 * 50.).view(35, 50)
    n = torch_vnpu.npu_format_cast(c.to(NPU), 'FRACTAL_NZ')
    n.resize_(40, 60)
    assert n.shape == (40, 60) and torch_vnpu.get_npu_format(n) == 29
    assert torch.equal(n.cpu().view(-1)[:35 * 50], c.view(-1))
    n.resize_(7, 5)
    assert torch.equal(n.cpu(), c.view(-1)[:35].view(7, 5))
    n.resize_(10)
    assert torch_vnpu.get_npu_format(n) == 2
    assert torch.equal(n.cpu(), c.view(-1)[:10])
    v = torch_vnpu.npu_format_cast(c.to(NPU), 'FRACTAL_NZ')[1:]
    with pytest.raises(RuntimeError, match='view of an internal-format tensor'):
        v.resize_(3, 3)


def test_resize_and_set():
    n = torch.arange(6.).to(NPU)
    n.resize_(3, 4)
    assert n.shape == (3, 4)
    assert n.cpu().view(-1)[:6].tolist() == [0, 1, 2, 3, 4, 5]
    n.resize_(2)
    assert n.cpu().tolist() == [0, 1]
    m = torch.empty(0, device=NPU)
    m.set_(n)
    assert m.shape == n.shape
    assert m.storage().data_ptr() == n.storage().data_ptr()
    m.fill_(7)
    assert n.cpu().tolist() == [7, 7]
    e = torch.ones(3, device=NPU)
    e.set_()
    assert e.numel() == 0


def test_set_takes_any_storage_of_the_device():
    # a byte slice of an npu storage owns nothing (UntypedStorage[a:b]);
    # set_ takes it as the CPU's set_ takes a slice of a CPU storage
    # (PyTorch's test_storage), and kernels write through it
    n = torch.arange(8, dtype=torch.int32).to(NPU)
    m = torch.empty(0, dtype=torch.int32, device=NPU)
    m.set_(n.untyped_storage()[8:24])
    assert m.cpu().tolist() == [2, 3, 4, 5]
    m.add_(10)
    assert n.cpu().tolist() == [0, 1, 12, 13, 14, 15, 6, 7]
    with pytest.raises(RuntimeError, match='the devices must match'):
        torch.empty(0, device=NPU).set_(torch.ones(2).untyped_storage())


@pytest.fixture
def fill_uninitialized_memory():
    was = (torch.are_deterministic_algorithms_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(was[0])
    torch.utils.deterministic.fill_uninitialized_memory = was[1]


@pytest.mark.parametrize('dt', [torch.float16, torch.float32, torch.int16,
                                torch.int64, torch.bool, torch.complex64])
def test_new_memory_is_filled_when_deterministic(fill_uninitialized_memory, dt):
    # PyTorch's backends fill what empty and resize_ hand out with NaN or
    # the integer maximum under these settings (test_deterministic_empty)
    for make in (lambda d: torch.empty(3, dtype=dt, device=d),
                 lambda d: torch.empty_strided((3,), (2,), dtype=dt, device=d),
                 # elements overlap: fill_ writes them all the same
                 lambda d: torch.empty_strided((10, 9), (1, 5), dtype=dt, device=d),
                 lambda d: torch.empty_like(torch.ones(3, 2, device=d).t(), dtype=dt)):
        n, want = make(NPU), make('cpu')
        assert n.stride() == want.stride()
        assert torch.equal(n.cpu(), want) if not dt.is_floating_point and \
            not dt.is_complex else bool(n.cpu().isnan().all())
    # resize_ fills only what the storage gained
    n = torch.zeros(2, dtype=dt, device=NPU)
    n.resize_(5)
    c = torch.zeros(2, dtype=dt)
    c.resize_(5)
    assert torch.equal(n.cpu()[:2], c[:2])
    assert torch.equal(n.cpu()[2:].isnan(), c[2:].isnan()) and \
        (dt.is_floating_point or dt.is_complex or torch.equal(n.cpu(), c))


def test_repr():
    n = torch.tensor([[1.5, -2.0], [float('nan'), 3.0]]).to(NPU)
    r = repr(n)
    assert "device='npu:0'" in r and 'nan' in r and '1.5000' in r
    assert 'npu' in repr(torch.ones(2, dtype=torch.int32, device=NPU))
    assert repr(torch.empty(0, device=NPU)).startswith('tensor([]')


def test_legacy_new():
    # PyTorch 1.13's Tensor.new refuses PrivateUse1; torch_vnpu gives it
    # the legacy semantics (torch.testing.make_non_contiguous uses it)
    x = torch.ones(2, 3, device=NPU, dtype=torch.float16)
    assert x.new().shape == (0,) and x.new().device == x.device
    e = x.new(4, 5)
    assert e.shape == (4, 5) and e.dtype == x.dtype and e.device == x.device
    assert x.new(torch.Size([7])).shape == (7,)
    assert torch.equal(x.new([1, 2]).cpu(), torch.tensor([1., 2.]).half())
    assert x.new(x).data_ptr() == x.data_ptr()
    with pytest.raises(TypeError):
        x.new(torch.ones(2))            # another type
    with pytest.raises(RuntimeError):
        x.new(3, device='cpu')
    with pytest.raises(TypeError):
        x.new(3, bogus=1)
    assert torch.ones(2).new(3).shape == (3,)   # the CPU's own


def test_out_on_another_device_is_refused():
    # TensorIterator's rule, for npu kernels and the fallback alike
    # (found by PyTorch's TestCommon.test_out)
    x = torch.randn(5, device=NPU)
    for f in (lambda o: torch.add(x, x, out=o),
              lambda o: torch.erfinv(x, out=o)):
        with pytest.raises(RuntimeError, match='same device'):
            f(torch.empty(5))


def test_resize_to_the_same_sizes_keeps_strides():
    # PyTorch's resize_: an out= view of the right shape stays a view
    t = torch.empty(10, device=NPU)[::2]
    assert t.resize_(5).stride() == (2,)
    torch.ones(5, out=t)
    assert t.stride() == (2,) and torch.equal(t.cpu(), torch.ones(5))
    assert t.resize_(2, 2).stride() == (2, 1)


def test_calls_mixing_npu_and_meta_tensors_as_the_cpu():
    # calls mixing a device tensor and a meta one do what they do with a
    # CPU tensor: PyTorch 2.13 refuses the elementwise ones and cat with
    # the device mismatch (1.13 ran them all on meta), and its mm gives a
    # tensor of the other operand's device (of unspecified values)
    w = torch.randn(10, 3, device='meta')
    calls = {
        'mm': lambda x: x @ w,
        'mm_meta_first': lambda x: w.t() @ x.t(),
        'add': lambda x: x[:, :3] + w[0],
        'add_meta_first': lambda x: w[0] + x[:, :3],
        'cat': lambda x: torch.cat([x[:, :3], w]),
    }
    for name, fn in calls.items():
        outcomes = []
        for dev in ('cpu', NPU):
            x = torch.randn(5, 10, device=dev)
            try:
                r = fn(x)
                outcomes.append(('value', 'meta' if r.is_meta else
                                 'x' if r.device == x.device else
                                 str(r.device), tuple(r.shape)))
            except Exception as e:  # noqa: BLE001 - compared below
                msg = str(e).split('\n')[0].replace(str(x.device), 'X')
                outcomes.append((type(e), msg))
        assert outcomes[0] == outcomes[1], (name, outcomes)
    # a module built on meta, its input on the device (PyTorch's
    # test_module_to_empty)
    x = torch.randn(5, 10, device=NPU)
    m = torch.nn.Linear(10, 3, device='meta')
    m.to_empty(device=NPU)
    assert m(x).device == x.device


def test_out_dtypes_pytorch_requires():
    # unary_op's out= has the input's dtype; max.dim's values the input's
    # and indices int64 (TestTypePromotion, TestReductions on the device)
    t = torch.tensor([1., -2.], device=NPU)
    for f in (torch.neg, torch.abs):
        with pytest.raises(RuntimeError, match='Found dtype Double but expected Float'):
            f(t, out=torch.empty(0, dtype=torch.float64, device=NPU))
    x = torch.randn(5, 5, device=NPU)
    for outs in ((torch.empty(5, dtype=torch.int32, device=NPU),
                  torch.empty(5, dtype=torch.int64, device=NPU)),
                 (torch.empty(5, device=NPU),
                  torch.empty(5, dtype=torch.float64, device=NPU))):
        with pytest.raises(RuntimeError, match='Expected out tensor to have dtype'):
            torch.max(x, dim=0, out=outs)


def test_mode_out():
    # PyTorch's mode.values is device-generic and refuses all but CPU,
    # CUDA and XPU tensors: npu's runs the CPU kernel through the fallback
    x = torch.tensor([[1., 2., 2., 5.], [3., 3., 1., 1.]])
    want = torch.mode(x, 1)
    v, i = torch.empty(0, device=NPU), torch.empty(0, dtype=torch.long, device=NPU)
    got = torch.mode(x.to(NPU), 1, out=(v, i))
    assert got[0] is v and got[1] is i
    assert torch.equal(v.cpu(), want.values) and torch.equal(i.cpu(), want.indices)


# Result layouts: what PyTorch's TensorIterator (elementwise ops) and its
# convolution and pooling kernels give the same inputs on the CPU.
LAYOUTS = {
    'contiguous': lambda x: x,
    'channels_last': lambda x: x.contiguous(memory_format=torch.channels_last),
    'permuted view': lambda x: x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
    'transposed': lambda x: x.transpose(2, 3).contiguous().transpose(2, 3),
    'sliced': lambda x: torch.cat([x, x], 3)[..., ::2],
    'expanded': lambda x: x[:, :1].expand(x.shape),
}
LAYOUT_OPS = {
    'relu': torch.relu, 'neg': torch.neg, 'exp': torch.exp,
    'sigmoid': torch.sigmoid, 'tanh': torch.tanh,
    'gelu': torch.nn.functional.gelu, 'silu': torch.nn.functional.silu,
    'hardswish': torch.nn.functional.hardswish,
    'add scalar': lambda x: x + 1, 'mul scalar': lambda x: x * 2,
    'add self': lambda x: x + x, 'add contiguous': lambda x: x + x.contiguous(),
    'contiguous add': lambda x: x.contiguous() + x,
    'add broadcast': lambda x: x + x[0, 0, 0],
    'eq': lambda x: x == 0, 'clamp': lambda x: x.clamp(0, 1),
    'pow': lambda x: x.pow(2), 'pow 1': lambda x: x.pow(1),
    'where': lambda x: torch.where(x > 0, x, x.contiguous()),
    'half': lambda x: x.half(),
    'max_pool2d': lambda x: torch.nn.functional.max_pool2d(x, 2),
    'avg_pool2d': lambda x: torch.nn.functional.avg_pool2d(x, 2),
    'conv2d': lambda x: torch.nn.functional.conv2d(
        x, torch.ones(2, 3, 3, 3, device=x.device)),
    'batch_norm train': lambda x: torch.nn.functional.batch_norm(
        x, None, None, training=True),
    'batch_norm eval': lambda x: torch.nn.functional.batch_norm(
        x, torch.zeros(3, device=x.device), torch.ones(3, device=x.device)),
    'layer_norm': lambda x: torch.nn.functional.layer_norm(x, (6,)),
    'softmax': lambda x: x.softmax(1),
    # an out= to resize takes the result's layout (TensorIterator's)
    'add out=': lambda x: torch.add(x, 1, out=x.new_empty(0)),
    'eq out=': lambda x: torch.eq(x, 0, out=x.new_empty(0, dtype=torch.bool)),
    'group_norm': lambda x: torch.nn.functional.group_norm(x, 3),
}


@pytest.mark.parametrize('layout', LAYOUTS)
@pytest.mark.parametrize('op', LAYOUT_OPS)
def test_result_layout_follows_pytorch(op, layout):
    base = torch.randn(2, 3, 4, 6)
    x = LAYOUTS[layout](base)
    xn = LAYOUTS[layout](base.to(NPU))
    assert xn.stride() == x.stride()
    want = LAYOUT_OPS[op](x)
    got = LAYOUT_OPS[op](xn)
    assert got.stride() == want.stride()
    assert_same(got, want)


def test_transposed_result_layout():
    a = torch.arange(30.).reshape(6, 5)
    got = a.to(NPU).t() + 1
    assert got.stride() == (a.t() + 1).stride() == (1, 5)
