# SPDX-License-Identifier: MIT
"""Op semantics PyTorch's CPU decides, judged against PyTorch itself on
the same call: an out= that is also an input (TensorIterator never resizes
it), comparisons with Python scalars the tensor's dtype cannot hold, and
matmul of FRACTAL_NZ operands in every rank combination."""
import math
import warnings

import pytest
import torch

import torch_vnpu
from conftest import NPU, assert_same


def outcome(fn):
    """(result or exception, warnings) of fn(), on whatever device."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001 - compared below
            r = e
    return r, [str(x.message) for x in w]


def expect_like_cpu(cpu, npu, computed_in=None):
    """The npu call's outcome is the CPU call's: the same exception type
    and message, or the same value and the same warnings. computed_in:
    the dtype the value was computed in when the result only holds it
    widened (a float64 out= of float32 inputs), judged at its tolerance."""
    (c, cw), (n, nw) = cpu, npu
    if isinstance(c, Exception) and 'INTERNAL ASSERT FAILED' in str(c):
        return  # a bug of PyTorch's CPU kernel, not a semantics to follow
    if isinstance(c, Exception):
        assert isinstance(n, Exception), \
            'PyTorch raises %r, the npu returned %r' % (c, n)
        assert type(n) is type(c), (type(n), type(c))
        assert str(n).split('\n')[0] == str(c).split('\n')[0]
        return
    assert not isinstance(n, Exception), \
        'PyTorch returns, the npu raised %r' % n
    if computed_in is not None and isinstance(c, torch.Tensor) and \
            isinstance(n, torch.Tensor) and c.dtype == n.dtype and \
            c.dtype.is_floating_point and c.dtype.itemsize > \
            computed_in.itemsize and torch.equal(c.to(computed_in).to(c.dtype), c):
        # float32 values exactly (widening is exact): PyTorch 2's CPU
        # fuses addcmul's value * t1 * t2 + self into one FMA, the
        # device rounds the product first; float32's tolerance holds
        assert_same(n.to(computed_in), c.to(computed_in))
    else:
        assert_same(n, c)
    def resized(ws):   # without where in the C++ source it was raised
        return [m.split(' (Triggered internally')[0] for m in ws
                if 'resized' in m]
    assert resized(nw) == resized(cw)


# ---- an out= that is also an input -----------------------------------------

ELEMENTWISE_OUT = {
    'add': lambda a, b, o: torch.add(a, b, out=o),
    'add_alpha': lambda a, b, o: torch.add(a, b, alpha=2, out=o),
    'sub': lambda a, b, o: torch.sub(a, b, out=o),
    'mul': lambda a, b, o: torch.mul(a, b, out=o),
    'div': lambda a, b, o: torch.div(a, b, out=o),
    'maximum': lambda a, b, o: torch.maximum(a, b, out=o),
    'minimum': lambda a, b, o: torch.minimum(a, b, out=o),
    'eq': lambda a, b, o: torch.eq(a, b, out=o),
    'lt': lambda a, b, o: torch.lt(a, b, out=o),
    'ge': lambda a, b, o: torch.ge(a, b, out=o),
    'where': lambda a, b, o: torch.where(b > 0, a, b, out=o),
    'addcmul': lambda a, b, o: torch.addcmul(a, b, b, value=0.5, out=o),
    'addcdiv': lambda a, b, o: torch.addcdiv(a, a, b.abs() + 1, out=o),
    'sigmoid_backward': lambda a, b, o:
        torch.ops.aten.sigmoid_backward.grad_input(a, b, grad_input=o),
    'threshold_backward': lambda a, b, o:
        torch.ops.aten.threshold_backward.grad_input(a, b, 0.1,
                                                     grad_input=o),
    'atan2': lambda a, b, o: torch.atan2(a, b, out=o),     # the fallback
}

# (a's shape, b's shape, which tensor is the out=: 'a', 'b' or a shape
# for a new one, its dtype)
OUT_CASES = [
    ((1, 2, 7), (7, 0, 2, 7), 'a', None),     # the oracle's case
    ((1, 2, 7), (7, 1, 2, 7), 'a', None),
    ((2, 7), (3, 2, 7), 'a', None),
    ((3, 2, 7), (2, 7), 'b', None),           # out=other
    ((2, 7), (3, 2, 7), 'b', None),           # the larger input: computed
    ((0,), (3, 1), 'a', None),                # empty, still an input
    ((3, 2), (2,), 'a', None),                # the same shape
    ((7, 1, 2, 7), (2, 7), (1, 2, 7), None),  # not an input: resized, warns
    ((3, 2), (2,), (0,), None),               # empty: resized quietly
    ((3, 2), (2,), (3, 2), torch.float64),
    ((3, 2), (2,), (3, 2), torch.int32),      # can't be cast
]


def make_out_call(fn, sa, sb, which, dt, device, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(sa, generator=g).to(device)
    b = torch.randn(sb, generator=g).to(device)
    if which == 'a':
        o = a
    elif which == 'b':
        o = b
    else:
        o = torch.zeros(which, dtype=dt or torch.float32).to(device)
    return lambda: (fn(a, b, o), o)[1]


@pytest.mark.parametrize('name', sorted(ELEMENTWISE_OUT))
def test_out_that_is_an_input(name):
    fn = ELEMENTWISE_OUT[name]
    for i, (sa, sb, which, dt) in enumerate(OUT_CASES):
        cpu = outcome(make_out_call(fn, sa, sb, which, dt, 'cpu', 28 + i))
        npu = outcome(make_out_call(fn, sa, sb, which, dt, NPU, 28 + i))
        try:
            expect_like_cpu(cpu, npu, computed_in=torch.float32)
        except AssertionError as e:
            raise AssertionError('%s case %s: %s' %
                                 (name, (sa, sb, which, dt), e)) from None


def test_out_that_is_an_input_keeps_its_shape():
    x = torch.randn(1, 2, 7, device=NPU)
    before = x.cpu()
    with pytest.raises(RuntimeError,
                       match=r"output with shape \[1, 2, 7\] doesn't match "
                             r"the broadcast shape \[7, 0, 2, 7\]"):
        torch.add(x, torch.randn(7, 0, 2, 7, device=NPU), out=x)
    assert x.shape == (1, 2, 7)
    assert torch.equal(x.cpu(), before)


def test_int_out_that_is_an_input_fails_on_its_shape_first():
    for dev in ('cpu', NPU):
        x = torch.zeros(2, dtype=torch.int32, device=dev)
        with pytest.raises(RuntimeError,
                           match=r"output with shape \[2\] doesn't match "
                                 r"the broadcast shape \[3, 2\]"):
            x.add_(torch.randn(3, 2, device=dev))
        with pytest.raises(RuntimeError,
                           match=r"output with shape \[2\] doesn't match "
                                 r"the broadcast shape \[3, 2\]"):
            torch.add(x, torch.randn(3, 2, device=dev), out=x)


# ---- comparisons with scalars the dtype cannot hold ------------------------

COMPARE = ('eq', 'ne', 'lt', 'le', 'gt', 'ge')
FLOAT_VALUES = [65504., -65504., 1., math.inf, -math.inf, math.nan, 0.,
                -0., 3e38, 1e-8]
INT_VALUES = [1, -1, 127, 0, -128, 100, 255]
SCALARS = [1e30, -1e30, math.inf, -math.inf, math.nan, 65519., 65520.,
           100000, 1e39, -1e300, 3.3961e38, 1000, -1000, -255, 256, -1,
           2 ** 40, 2 ** 63 - 1, -2 ** 63, 0.5, True, False]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool]


def values_of(dt):
    if dt.is_floating_point:
        return torch.tensor(FLOAT_VALUES).to(dt)
    if dt == torch.bool:
        return torch.tensor([True, False, True])
    return torch.tensor(INT_VALUES, dtype=torch.int64).to(dt)


@pytest.mark.parametrize('dt', DTYPES, ids=str)
def test_compare_with_scalars_out_of_range(dt):
    x = values_of(dt)
    xn = x.to(NPU)
    for s in SCALARS:
        for op in COMPARE:
            cpu = outcome(lambda: getattr(torch, op)(x, s))
            npu = outcome(lambda: getattr(torch, op)(xn, s))
            try:
                expect_like_cpu(cpu, npu)
            except AssertionError as e:
                raise AssertionError('%s(%s, %r): %s' % (op, dt, s, e)) \
                    from None
        # the operators, the out= and in-place forms
        for fn in (lambda t: t < s, lambda t: t == s, lambda t: s >= t,
                   lambda t: torch.gt(t, s, out=torch.empty(
                       0, dtype=torch.bool, device=t.device)),
                   lambda t: t.clone().eq_(s)):
            expect_like_cpu(outcome(lambda: fn(x)), outcome(lambda: fn(xn)))


def test_half_compares_with_an_overflowing_scalar():
    x = torch.tensor([1., 65504., -65504.], dtype=torch.float16, device=NPU)
    assert (x < 1e30).cpu().tolist() == [True, True, True]
    assert (x == 1e30).cpu().tolist() == [False, False, False]
    assert (x > -1e30).cpu().tolist() == [True, True, True]


# ---- matmul of FRACTAL_NZ operands -----------------------------------------

MATMUL_SHAPES = [
    ((5, 1), (2, 1, 5)),          # the oracle's case
    ((3, 4), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (4,)),
    ((3, 4), (2, 4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)),    # broadcast batch
    ((1, 3, 4), (2, 3, 4, 5)),
    ((1, 5), (5, 1)),
    ((17, 16), (2, 1, 16, 18)),
]


def nz(t):
    return torch_vnpu.npu_format_cast(t.to(NPU), 'FRACTAL_NZ') \
        if t.dim() >= 2 else t.to(NPU)


@pytest.mark.parametrize('sa,sb', MATMUL_SHAPES, ids=str)
def test_matmul_of_nz_operands(sa, sb):
    g = torch.Generator().manual_seed(2813)
    a = torch.randn(sa, generator=g)
    b = torch.randn(sb, generator=g)
    an, bn = nz(a), nz(b)
    for t in (an, bn):
        if t.dim() >= 2:
            assert torch_vnpu.get_npu_format(t) == 29
    assert_same(torch.matmul(an, bn), torch.matmul(a, b))
    assert_same(torch.matmul(an, b.to(NPU)), torch.matmul(a, b))
    assert_same(torch.matmul(a.to(NPU), bn), torch.matmul(a, b))
    # transposed views of NZ tensors (b^T @ a^T; a vector stays)
    def tr(t):
        return t.transpose(-1, -2) if t.dim() >= 2 else t
    if a.dim() >= 2:
        assert_same(torch.matmul(tr(bn), tr(an)),
                    torch.matmul(tr(b), tr(a)))


def test_views_of_nz_tensors_in_linear_and_mm():
    g = torch.Generator().manual_seed(28)
    w = torch.randn(1, 6, generator=g)
    x = torch.randn(4, 6, generator=g)
    wn = nz(w)
    assert_same(torch.nn.functional.linear(x.to(NPU), wn),
                torch.nn.functional.linear(x, w))
    m = torch.randn(4, 6, generator=g)
    mn = nz(m)
    assert_same(torch.mm(mn.view(6, 4), x.t().to(NPU)[:4]),
                torch.mm(m.view(6, 4), x.t()[:4]))
    assert_same(torch.mm(mn.reshape(3, 8), torch.ones(8, 2, device=NPU)),
                torch.mm(m.reshape(3, 8), torch.ones(8, 2)))
    assert_same(torch.bmm(mn.unsqueeze(0), torch.ones(1, 6, 3, device=NPU)),
                torch.bmm(m.unsqueeze(0), torch.ones(1, 6, 3)))
