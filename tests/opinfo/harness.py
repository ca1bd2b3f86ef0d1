# SPDX-License-Identifier: MIT
"""Every NPU op judged by PyTorch's own samples, through both front ends.

For every op of dispatcher/ops/native_functions.yaml that the installed PyTorch's
op_db has an OpInfo for (and the OpInfos that reach the others), every
dtype the OpInfo lists that the device has, its sample_inputs,
reference_inputs and error_inputs:

- the C front end (vnpu_c.py over boxed_call.c) on cpu and on npu: the aten
  calls PyTorch makes for the sample (capture.py: traced whole and
  dispatched below autograd, backward ops included), its in-place and out=
  forms, and cases derived from their values for ops PyTorch reaches only
  from C++; calls PyTorch refuses must be refused; gradients through the C
  autograd against PyTorch's, and gradcheck in float64;
- torch_vnpu: the OpInfo's own call on npu against the same call
  on the CPU, its in-place variant, gradients against the CPU's, and
  error_inputs must raise PyTorch's error.

Values are compared with torch.testing.assert_close at PyTorch's default
tolerance for the result's dtype, widened by the OpInfo's own
toleranceOverride decorators; a result that agrees instead with PyTorch's
op computed wider and rounded once is counted apart. Deliberate
differences are listed in accepted.py with their reason; anything else
that differs is a failure, and so is a listed difference that no longer
occurs or an aten op of the yaml that no case reaches. Prints one line
per op, dtype and front end (docs/dispatcher.md).

  harness.py                 both front ends (two child processes)
  harness.py --front c|torch one of them, JSON on stdout (the children)
  harness.py --ops a,b       only these OpInfos (names as in op_db)
  harness.py --save FILE     also every count and mismatch as JSON
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'torch', 'shim'))  # expecttest

import torch  # noqa: E402
from torch.testing._internal.common_device_type import toleranceOverride  # noqa: E402

import capture  # noqa: E402
from yaml_opinfos import selected_opinfos, yaml_ops  # noqa: E402
from accepted import ACCEPTED, F32_RESULTS, SAMPLED_BY  # noqa: E402

DEVICE_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                 torch.int64, torch.float16, torch.bfloat16, torch.float32,
                 torch.float64]
GRAD_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# ops whose result is uninitialised memory: shape and dtype only
UNINITIALISED = {'aten::empty.memory_format', 'aten::empty_strided',
                 'aten::empty_like', 'aten::resize_', 'empty', 'empty_like',
                 'empty_strided', 'resize_', 'npu::empty_with_format'}
# ops whose indices among equal values PyTorch leaves unspecified (sort
# with stable=False, argsort, topk: its docs, and CUDA's order differs
# from the CPU's): where each index of a line selects the value PyTorch's
# does, no index twice, the indices count as PyTorch's. Per op: the
# position of its indices among the results, and the dim of a call (C
# front end: the aten arguments by name) or of a sample (torch: input,
# positional and keyword arguments).
TIES_UNSPECIFIED = {
    'aten::sort': (1, lambda a: a.get('dim', -1)),
    'aten::sort.stable': (1, lambda a: a.get('dim', -1)),
    'aten::argsort': (0, lambda a: a.get('dim', -1)),
    'aten::topk': (1, lambda a: a.get('dim', -1)),
    'sort': (1, lambda i, a, k: a[0] if a else k.get('dim', -1)),
    'argsort': (0, lambda i, a, k: a[0] if a else k.get('dim', -1)),
    'topk': (1, lambda i, a, k: a[1] if len(a) > 1 else k.get('dim', -1)),
}


def with_tied_indices(name, got, want, self_, dim):
    """got with its indices replaced by want's where they are the same up
    to the order of equal values (TIES_UNSPECIFIED)."""
    pos = TIES_UNSPECIFIED[name][0]
    got, want = as_list(got), as_list(want)
    if not isinstance(self_, torch.Tensor) or len(got) <= pos or len(want) <= pos:
        return got
    g, w = got[pos], want[pos]
    if not isinstance(g, torch.Tensor) or g.shape != w.shape or g.dtype != w.dtype:
        return got
    g = g.cpu()
    x = self_.detach().cpu()
    if x.dim() == 0 or g.numel() == 0:
        return got
    d = dim % x.dim()
    try:
        picked_g, picked_w = x.gather(d, g), x.gather(d, w)
    except RuntimeError:
        return got
    distinct = torch.equal(g.sort(d).values.diff(dim=d).ne(0).all(d),
                           torch.ones_like(g.select(d, 0), dtype=torch.bool)) \
        if g.shape[d] > 1 else True
    same = torch.equal(picked_g, picked_w) or (
        picked_g.is_floating_point() and
        torch.equal(picked_g.isnan(), picked_w.isnan()) and
        torch.equal(picked_g.nan_to_num(0), picked_w.nan_to_num(0)))
    if distinct and same:
        got = list(got)
        got[pos] = w
    return got


def opinfo_id(o):
    return o.name + ('/' + o.variant_test_name if o.variant_test_name else '')


def seed_of(*parts):
    return zlib.crc32('/'.join(str(p) for p in parts).encode()) & 0x7fffffff


def dtype_name(d):
    return str(d).replace('torch.', '')


# ---- tolerances and comparison ------------------------------------------------

def tolerance(op, dtype):
    """PyTorch's default for dtype, widened by the OpInfo's overrides."""
    from torch.testing._comparison import default_tolerances
    rtol, atol = default_tolerances(torch.empty(0, dtype=dtype))
    for d in op.decorators if op else ():
        for dec in getattr(d, 'decorators', ()):
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                rtol = max(rtol, dec.d[dtype].rtol)
                atol = max(atol, dec.d[dtype].atol)
    return rtol, atol


def as_list(x):
    if isinstance(x, (tuple, list)):
        return list(x)
    return [x]


def compare(got, want, op, shape_only=False):
    """Raises AssertionError saying how got differs from want."""
    got, want = as_list(got), as_list(want)
    if len(got) < len(want):
        raise AssertionError('%d results, PyTorch %d' % (len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise AssertionError('result %d is %r, PyTorch a tensor' % (i, g))
            g = g.cpu()
            if g.shape != w.shape or g.dtype != w.dtype:
                raise AssertionError('result %d: %s %s, PyTorch %s %s' % (
                    i, dtype_name(g.dtype), list(g.shape),
                    dtype_name(w.dtype), list(w.shape)))
            if not shape_only:
                rtol, atol = tolerance(op, w.dtype)
                torch.testing.assert_close(g, w, rtol=rtol, atol=atol,
                                           equal_nan=True, check_stride=False)
        elif isinstance(w, (int, float, bool)) and not shape_only:
            if isinstance(g, torch.Tensor):
                g = g.item()
            tol = tolerance(op, torch.float64)
            if not (g == w or (isinstance(w, float) and math.isnan(w) and
                               isinstance(g, float) and math.isnan(g)) or
                    (isinstance(w, float) and
                     abs(g - w) <= tol[1] + tol[0] * abs(w))):
                raise AssertionError('result %d: %r, PyTorch %r' % (i, g, w))


# each floating dtype computed one step wider, for the second reference
WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32,
         torch.float32: torch.float64}


def upcast(x, to=None):
    """x with its floating tensors one step wider, or all in the dtype
    to (fresh leaves where x's required grad)."""
    def widen(t):
        if not isinstance(t, torch.Tensor) or t.dtype not in WIDER:
            return t
        return capture.snapshot(t).to(to or WIDER[t.dtype]).requires_grad_(
            t.requires_grad)
    return capture.tree_map(widen, x)


def to_f64(x):
    return upcast(x, torch.float64)


# the wider references, in order: one step wider, then float64
WIDENINGS = (upcast, to_f64)


def rounded_like(ref, want):
    """ref's tensors rounded to the dtypes of want's."""
    ref, want = as_list(ref), as_list(want)
    return [r.detach().to(w.dtype) if isinstance(r, torch.Tensor) and
            isinstance(w, torch.Tensor) else r for r, w in zip(ref, want)]


def judge(book, key, what, where, got, want, op, wider=None,
          shape_only=False, ties=None):
    """Records whether got agrees with PyTorch's want. A floating result
    that misses want but agrees with wider(widen) (the same op computed by
    PyTorch from the same inputs made wider by widen, one step or to
    float64, rounded once to the result's dtype) is counted apart, not as
    a mismatch: it is as close to the exact result as PyTorch's (the
    device accumulates f16/bf16 in f32 and rounds once, as CUDA, where
    PyTorch's CPU rounds intermediate results; sums run in another
    order; fused CPU formulas cancel)."""
    front, name, dn = key
    if ties is not None:
        got = with_tied_indices(name, got, want, *ties)
    if name in F32_RESULTS:
        rounded = rounded_like(got, want)
        if any(isinstance(g, torch.Tensor) and g.dtype != r.dtype
               for g, r in zip(as_list(got), rounded)):
            book.listed_f32(front, name, dn)
            got = rounded
    try:
        compare(got, want, op, shape_only)
        return
    except AssertionError as e:
        err = e
    for widen in WIDENINGS if wider is not None else ():
        try:
            compare(got, rounded_like(wider(widen), want), op)
            book.wider(front, name, dn)
            return
        except Exception:
            pass
    book.mismatch(front, name, dn, what, first_line(err), where)


def first_line(e):
    """The error in one line (assert_close's counts and greatest
    differences kept)."""
    lines = [l.strip() for l in str(e).strip().split('\n') if l.strip()]
    if isinstance(e, AssertionError):
        lines = [l for l in lines if not l.startswith('Tensor-likes')]
        return '; '.join(lines)[:300]
    return (type(e).__name__ + ': ' + (lines[0] if lines else ''))[:300]


# ---- bookkeeping ----------------------------------------------------------------

class Book:
    """Counts per (front, op, dtype) and the mismatches, each either
    listed in accepted.py (with its reason) or not."""

    def __init__(self):
        self.stats = {}
        self.mismatches = []
        self.f32_results = set()

    def _row(self, front, op, dtype):
        return self.stats.setdefault(
            (front, op, dtype),
            dict(run=0, bad=0, listed=0, fallback=0, unrep=0, grads=0,
                 wider=0))

    def ran(self, front, op, dtype, fallback=0):
        r = self._row(front, op, dtype)
        r['run'] += 1
        r['fallback'] += fallback

    def grad(self, front, op, dtype):
        self._row(front, op, dtype)['grads'] += 1

    def listed_f32(self, front, op, dtype):
        self._row(front, op, dtype)['listed'] += 1
        self.f32_results.add(op)

    def wider(self, front, op, dtype):
        self._row(front, op, dtype)['wider'] += 1

    def unrepresentable(self, front, op, dtype):
        self._row(front, op, dtype)['unrep'] += 1

    def mismatch(self, front, op, dtype, what, msg, where):
        key = listed(front, op, dtype, what)
        self._row(front, op, dtype)['listed' if key else 'bad'] += 1
        self.mismatches.append(dict(front=front, op=op, dtype=dtype,
                                    what=what, msg=msg, where=where,
                                    listed=key))

    def dump(self):
        return dict(stats=[list(k) + [v] for k, v in self.stats.items()],
                    mismatches=self.mismatches,
                    f32_results=sorted(self.f32_results))


def listed(front, op, dtype, what):
    """The accepted.py key this mismatch matches, or None."""
    for f in (front, front.split('-')[0], '*'):
        for d in (dtype, '*'):
            if (f, op, d, what) in ACCEPTED:
                return '|'.join((f, op, d, what))
    return None


def samples_of(op, dtype):
    """(kind, SampleInput) of the OpInfo for dtype: sample_inputs, then
    the reference_inputs it defines beyond them."""
    grad = op.supports_autograd and dtype in GRAD_DTYPES
    torch.manual_seed(seed_of(opinfo_id(op), dtype))
    out = []
    try:
        out += [('sample', s) for s in
                op.sample_inputs('cpu', dtype, requires_grad=grad)]
    except Exception:
        pass
    if op.reference_inputs_func is not None:
        torch.manual_seed(seed_of(opinfo_id(op), dtype, 'ref'))
        try:
            out += [('reference', s) for s in
                    op.reference_inputs('cpu', dtype, requires_grad=grad)]
        except Exception:
            pass
    return out


def op_dtypes(op):
    return [d for d in DEVICE_DTYPES if d in op.supported_dtypes('cpu')]


# ---- the C front end ------------------------------------------------------------

def call_key(call):
    """Identity of a call's inputs, to run each distinct call once."""
    def k(v):
        if isinstance(v, torch.Tensor):
            dense = torch.empty(v.numel(), dtype=v.dtype)
            dense.copy_(v.detach().reshape(-1))
            return ('T', str(v.dtype), tuple(v.shape), tuple(v.stride()),
                    v.storage_offset(),
                    zlib.crc32(dense.view(torch.uint8).numpy().tobytes()))
        if isinstance(v, (list, tuple)):
            return tuple(k(x) for x in v)
        return repr(v)
    return (call.op, tuple((n, k(v)) for n, v in sorted(call.args.items())))


def run_c(opinfos, book):
    import vnpu_c
    ours = set(yaml_ops())
    gradchecked = {}
    for op in opinfos:
        oid = opinfo_id(op)
        print('c', oid, file=sys.stderr, flush=True)
        for dtype in op_dtypes(op):
            dn = dtype_name(dtype)
            seen = set()
            for i, (kind, s) in enumerate(samples_of(op, dtype)):
                where = '%s %s %s #%d' % (oid, dn, kind, i)
                grad_seed = seed_of(where) if (
                    op.supports_autograd and dtype in GRAD_DTYPES) else None
                top = capture.traced(op.op, s)
                calls = top + capture.dispatched(op.op, s, grad_seed)
                calls += variant_calls(op, s) + derived_calls(
                    calls, generic=i < GENERIC_SAMPLES)
                for call in calls:
                    if call.op not in ours:
                        continue
                    key = call_key(call)
                    if key in seen:
                        continue
                    seen.add(key)
                    if isinstance(call.out, capture.Raised):
                        # a dtype PyTorch's CPU has no kernel for (log of
                        # f16 in a backward) is no verdict on ours
                        if 'not implemented for' not in str(call.out.exc):
                            c_refusal(vnpu_c, book, call, dn, where,
                                      first_line(call.out.exc))
                        continue
                    run_c_call(vnpu_c, book, call, dn, op, where)
                    if call.level == 'traced' and grad_seed is not None:
                        c_grads(vnpu_c, book, call, dn, op, where, grad_seed)
                    if call.level == 'traced' and op.supports_autograd and \
                            dtype == torch.float64 and \
                            gradchecked.get(oid, 0) < GRADCHECKS:
                        gradchecked[oid] = gradchecked.get(oid, 0) + \
                            c_gradcheck(vnpu_c, book, call, dn, where)
        c_errors(vnpu_c, book, op)


def variant_calls(op, s):
    """The aten calls of the sample's in-place variant (add_, relu_) and
    of its out= form (add.out), as PyTorch dispatches them."""
    calls = []
    inp = s.input
    if op.inplace_variant is not None and isinstance(inp, torch.Tensor) \
            and torch._debug_has_internal_overlap(inp) == 0:
        i, a, k = capture.snapshot((inp, s.args, s.kwargs))
        calls += capture.dispatched(
            lambda x, *a, **k: op.inplace_variant(x, *a, **k),
            capture.sample_of(i.requires_grad_(False), a, k))
    if op.supports_out:
        try:
            want = op.op(s.input, *s.args, **s.kwargs)
        except Exception:
            return calls
        if isinstance(want, torch.Tensor):
            out = torch.empty(0, dtype=want.dtype)
            calls += capture.dispatched(
                lambda x, *a, **k: op.op(x, *a, out=out, **k), s)
    return calls


# the copies, fills and item derived from every op's tensors: from the
# first samples of each OpInfo and dtype (thousands of cases in all)
GENERIC_SAMPLES = 4


def derived_calls(calls, generic=True):
    """Cases for the ops PyTorch reaches only from C++ (add.Scalar, item),
    only as a decomposition (conv2d, a Scalar clamp), or that move data
    between devices (_copy_from), made from the values of the calls
    PyTorch made for the sample; their expected results are PyTorch's."""
    out = []

    def add(name, args, want=None):
        c = capture.Call(name, args, want, 'derived')
        if want is None:
            try:         # on a copy: an in-place op writes its arguments
                c = c._replace(out=capture.snapshot(capture.call_on_cpu(
                    c, capture.snapshot(args))))
            except Exception:
                return          # PyTorch refuses this combination too
        out.append(c)

    for c in calls:
        a = c.args
        if c.op in ('aten::add.Tensor', 'aten::mul.Tensor') and \
                isinstance(a.get('other'), (int, float)) and \
                isinstance(a.get('self'), torch.Tensor):
            add(c.op.replace('.Tensor', '.Scalar'), dict(a))
        if c.op == 'aten::clamp.Tensor' and isinstance(a['self'], torch.Tensor):
            bound = [None if v is None else v.flatten()[0].item()
                     if isinstance(v, torch.Tensor) and v.numel() else v
                     for v in (a['min'], a['max'])]
            add('aten::clamp', dict(self=a['self'], min=bound[0], max=bound[1]))
        if c.op == 'aten::index_put':
            add('aten::_index_put_impl_', dict(a, unsafe=False))
        if c.op == 'aten::relu' and torch._debug_has_internal_overlap(
                a['self']) == 0:
            add('aten::relu_', dict(a))
        if c.op == 'aten::_convolution' and not a['transposed'] and \
                a['input'].dim() == 4:
            add('aten::conv2d', dict(input=a['input'], weight=a['weight'],
                                     bias=a['bias'], stride=a['stride'],
                                     padding=a['padding'],
                                     dilation=a['dilation'],
                                     groups=a['groups']))
        if c.level != 'traced' or not generic:
            continue
        t = next((v for v in a.values() if isinstance(v, torch.Tensor) and
                  v.layout == torch.strided), None)
        if t is None:
            continue
        if t.numel() == 1:
            add('aten::item', dict(self=t))
            add('aten::_local_scalar_dense', dict(self=t))
        if t.numel():
            add('aten::full', dict(size=list(t.shape),
                                   fill_value=t.flatten()[0].item(),
                                   dtype=t.dtype, layout=None, device=None,
                                   pin_memory=None))
        add('aten::empty_strided', dict(size=list(t.shape),
                                        stride=list(t.stride()),
                                        dtype=t.dtype, layout=None,
                                        device=None, pin_memory=None))
        # PyTorch has these for backends only: the copy is the reference
        add('aten::_copy_from', dict(self=t, dst=torch.zeros_like(t),
                                     non_blocking=False), t.clone())
        add('aten::_copy_from_and_resize',
            dict(self=t, dst=torch.empty(0, dtype=t.dtype)), t.clone())
    return out


def run_c_call(vnpu_c, book, call, dn, op, where):
    for front, dev in (('c-cpu', vnpu_c.CPU), ('c-npu', vnpu_c.NPU)):
        vnpu_c.fallback_reset()
        try:
            rets, _ = vnpu_c.call(call.op, call.args, dev)
        except vnpu_c.Unrepresentable:
            book.unrepresentable(front, call.op, dn)
            continue
        except vnpu_c.CError as e:
            book.ran(front, call.op, dn)
            book.mismatch(front, call.op, dn, 'raises', first_line(e), where)
            continue
        got = [r.torch() if isinstance(r, vnpu_c.Tensor) else r for r in rets]
        book.ran(front, call.op, dn, vnpu_c.fallback_calls())
        ties = None
        if call.op in TIES_UNSPECIFIED:
            ties = (call.args.get('self'), TIES_UNSPECIFIED[call.op][1](call.args))
        judge(book, (front, call.op, dn), 'value', where, got, call.out, op,
              wider=lambda up: capture.call_on_cpu(call, up(call.args)),
              shape_only=call.op in UNINITIALISED, ties=ties)


def float_tensor_args(call):
    return [n for n, v in call.args.items()
            if isinstance(v, torch.Tensor) and v.is_floating_point()]


def cpu_grads(fn, args, names, seed, widen=None):
    """PyTorch's gradients of fn(args)'s first floating result, seeded
    with a random grad_output, for the tensor arguments names (one
    precision wider from the same values, grad_output included, with
    widen). (index of that result, its grad_output, [grads]) or None."""
    if widen:
        low = cpu_grads(fn, args, names, seed)
        if low is None:
            return None
        g = low[1]
    leaves = {n: (widen(args[n]) if widen else
                  capture.snapshot(args[n])).detach().requires_grad_()
              for n in names}
    try:
        out = fn(dict(widen(args) if widen else args, **leaves))
        outs = as_list(out)
        idx = [i for i, o in enumerate(outs)
               if isinstance(o, torch.Tensor) and o.requires_grad]
        if not idx:
            return None
        if widen:
            g = widen(g)
        else:
            torch.manual_seed(seed)
            g = torch.randn_like(outs[idx[0]])
        return idx[0], g, list(torch.autograd.grad(
            outs[idx[0]], [leaves[n] for n in names], g, allow_unused=True))
    except Exception:
        return None


def judge_grads(book, key, where, names, got, want, op, wider):
    for n, g, w in zip(names, got, want):
        if g is None or w is None:
            if (g is None) != (w is None):
                book.mismatch(*key, 'grad', 'gradient of %s: %s, PyTorch %s'
                              % (n, 'none' if g is None else 'a tensor',
                                 'none' if w is None else 'a tensor'), where)
            continue
        judge(book, key, 'grad', where, g, w, op,
              wider=(lambda up, n=n: wider(up)[names.index(n)]) if wider else None)


def c_grads(vnpu_c, book, call, dn, op, where, seed):
    """The C autograd's gradients of the call's first floating result
    against PyTorch's, for every floating tensor argument."""
    names = float_tensor_args(call)
    if not names:
        return
    fn = lambda args: capture.call_on_cpu(call, args)  # noqa: E731
    ref = cpu_grads(fn, call.args, names, seed)
    if ref is None:
        return
    i, g, want = ref
    wider = lambda up: cpu_grads(fn, call.args, names, seed, up)[2]  # noqa: E731
    for front, dev in (('c-cpu', vnpu_c.CPU), ('c-npu', vnpu_c.NPU)):
        book.grad(front, call.op, dn)
        try:
            rets, cleaves = vnpu_c.call(call.op, call.args, dev,
                                        requires_grad=names)
            vnpu_c.backward(rets[i], g)
        except vnpu_c.Unrepresentable:
            continue
        except vnpu_c.CError as e:
            book.mismatch(front, call.op, dn, 'grad', first_line(e), where)
            continue
        got = [vnpu_c.grad(cleaves[n]) if n in cleaves else None
               for n in names]
        judge_grads(book, (front, call.op, dn), where, names, got, want,
                    op, wider)


# gradcheck (f64, numerical against analytical Jacobians) of the first
# samples of each OpInfo whose inputs are small: each costs a C call per
# input element and per output element
GRADCHECKS = 3
GRADCHECK_NUMEL = 32


def c_gradcheck(vnpu_c, book, call, dn, where):
    """torch.autograd.gradcheck of the C dispatcher's cpu op and its C
    autograd in float64, where PyTorch's own CPU op passes it on the same
    inputs (so a non-differentiable point of the sample is no verdict).
    1 when it ran."""
    names = float_tensor_args(call)
    if not names or sum(call.args[n].numel() for n in names) > GRADCHECK_NUMEL:
        return 0
    want = as_list(call.out)
    idx = [i for i, o in enumerate(want)
           if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not idx:
        return 0
    i = idx[0]

    def c_forward(*xs):
        rets, _ = vnpu_c.call(call.op, dict(call.args, **dict(zip(names, xs))),
                              vnpu_c.CPU)
        return rets[i].torch()

    class CFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            ctx.xs = [x.detach() for x in xs]
            return c_forward(*ctx.xs)

        @staticmethod
        def backward(ctx, g):
            rets, leaves = vnpu_c.call(
                call.op, dict(call.args, **dict(zip(names, ctx.xs))),
                vnpu_c.CPU, requires_grad=names)
            try:
                vnpu_c.backward(rets[i], g.contiguous())
            except vnpu_c.CError as e:
                # a result that does not depend on the inputs (ones_like)
                # has no gradient, as PyTorch's non-differentiable ops
                if 'does not require grad' not in str(e):
                    raise
                return tuple(None for _ in names)
            return tuple(vnpu_c.grad(leaves[n]) if n in leaves else None
                         for n in names)

    def torch_forward(*xs):
        return as_list(capture.call_on_cpu(
            call, dict(call.args, **dict(zip(names, xs)))))[i]

    def check(fn):
        xs = [capture.snapshot(call.args[n]).requires_grad_() for n in names]
        try:
            return torch.autograd.gradcheck(fn, xs, raise_exception=False,
                                            check_undefined_grad=False)
        except Exception:
            return False

    try:
        c_forward(*[call.args[n] for n in names])
    except (vnpu_c.Unrepresentable, vnpu_c.CError):
        return 0                # judged (or skipped) as a value case
    if not check(torch_forward):
        return 0
    book.grad('c-cpu', call.op + ' (gradcheck)', dn)
    if not check(CFunction.apply):
        book.mismatch('c-cpu', call.op + ' (gradcheck)', dn, 'grad',
                      'gradcheck fails where PyTorch\'s passes', where)
    return 1


def c_errors(vnpu_c, book, op):
    """error_inputs through the C front end: the aten call PyTorch's CPU
    refuses must be refused on cpu and npu too."""
    if op.error_inputs_func is None:
        return
    ours = set(yaml_ops())
    for i, ei in enumerate(op.error_inputs('cpu')):
        # the call PyTorch's CPU kernel refused, if it is one of ours
        calls = capture.dispatched(op.op, ei.sample_input)
        if calls and isinstance(calls[-1].out, capture.Raised) and \
                calls[-1].op in ours:
            dn = next((dtype_name(v.dtype) for v in calls[-1].args.values()
                       if isinstance(v, torch.Tensor)), '-')
            c_refusal(vnpu_c, book, calls[-1], dn, '%s error_inputs #%d' % (
                opinfo_id(op), i), ei.error_regex)


def c_refusal(vnpu_c, book, call, dn, where, why):
    """A call PyTorch refused must be refused on cpu and npu too."""
    for front, dev in (('c-cpu', vnpu_c.CPU), ('c-npu', vnpu_c.NPU)):
        try:
            vnpu_c.call(call.op, call.args, dev)
        except vnpu_c.Unrepresentable:
            continue
        except vnpu_c.CError:
            book.ran(front, call.op + ' (errors)', dn)
            continue
        book.ran(front, call.op + ' (errors)', dn)
        book.mismatch(front, call.op + ' (errors)', dn, 'accepts',
                      'accepted what PyTorch refuses: ' + why, where)


# ---- torch_vnpu -----------------------------------------------------------------

def run_torch(opinfos, book):
    import torch_vnpu
    npu = torch.device('npu', 0)

    def to_npu(x):
        """x on the npu; tensors sharing a storage share one there too
        (an out= that views its inputs stays one), a tensor passed twice
        is one tensor there (an empty out= that is also an input)."""
        bases, done = {}, {}

        def move(t):
            if not isinstance(t, torch.Tensor):
                return t
            if id(t) not in done:
                st = t.detach().storage()
                key = (st.data_ptr(), t.dtype)
                if key not in bases or not st.data_ptr():
                    flat = torch.tensor([], dtype=t.dtype).set_(st, 0, (len(st),))
                    bases[key] = flat.to(npu)
                v = bases[key].as_strided(t.size(), t.stride(), t.storage_offset())
                done[id(t)] = v.detach().requires_grad_(t.requires_grad)
            return done[id(t)]
        return capture.tree_map(move, x)

    def fallbacks():
        return sum(c for _, c in torch_vnpu.fallback_report())

    for op in opinfos:
        oid = opinfo_id(op)
        print('torch', oid, file=sys.stderr, flush=True)
        for dtype in op_dtypes(op):
            dn = dtype_name(dtype)
            for i, (kind, s) in enumerate(samples_of(op, dtype)):
                where = '%s %s %s #%d' % (oid, dn, kind, i)
                torch_sample(book, op, oid, dn, where, s, to_npu,
                             fallbacks, dtype in GRAD_DTYPES)
        torch_errors(book, op, to_npu)


def torch_sample(book, op, oid, dn, where, s, to_npu, fallbacks, grad):
    """One sample: forward against the CPU, gradients, in-place variant."""
    leaves, rebuild = capture.flatten(s)
    if any(t.layout != torch.strided for t in leaves):
        book.unrepresentable('torch', oid, dn)
        return
    # fresh copies on both sides (the sample's tensors may be views of
    # another graph's leaves)
    args = dict(enumerate(capture.snapshot(leaves)))

    def call(d):
        i, a, k = rebuild([d[j] for j in range(len(leaves))])
        return op(i, *a, **k)

    try:
        want = call(args)
    except Exception:
        return                  # not a valid sample for PyTorch either
    nargs = to_npu(args)
    before = fallbacks()
    try:
        got = call(nargs)
        # a non_blocking copy into (pinned) host memory is read after
        # the stream's work, as CUDA's must be
        torch.npu.synchronize()
    except Exception as e:
        book.ran('torch', oid, dn)
        book.mismatch('torch', oid, dn, 'raises', first_line(e), where)
        return
    book.ran('torch', oid, dn, fallbacks() - before)
    ties = None
    if oid in TIES_UNSPECIFIED:
        i, a, k = rebuild([args[j] for j in range(len(leaves))])
        ties = (i, TIES_UNSPECIFIED[oid][1](i, a, k))
    judge(book, ('torch', oid, dn), 'value', where, got, want, op,
          wider=lambda up: call(up(args)), shape_only=oid in UNINITIALISED,
          ties=ties)
    names = [j for j, t in enumerate(leaves)
             if t.requires_grad and t.is_floating_point()]
    if grad and op.supports_autograd and names:
        seed = seed_of(where, 'grad')
        ref = cpu_grads(call, args, names, seed)
        if ref is not None:
            i, g, want_g = ref
            book.grad('torch', oid, dn)
            npu_leaves = {j: nargs[j].detach().requires_grad_()
                          for j in names}
            try:
                out = as_list(call(dict(nargs, **npu_leaves)))[i]
                got_g = torch.autograd.grad(
                    out, [npu_leaves[j] for j in names], g.to(out.device),
                    allow_unused=True)
                got_g = [None if x is None else x.cpu() for x in got_g]
            except Exception as e:
                book.mismatch('torch', oid, dn, 'grad', first_line(e), where)
            else:
                judge_grads(book, ('torch', oid, dn), where, names, got_g,
                            want_g, op,
                            lambda up: cpu_grads(call, args, names, seed,
                                                 up)[2])
    if op.inplace_variant is not None:
        torch_inplace(book, op, oid, dn, where, rebuild(
            [args[j] for j in range(len(leaves))]), to_npu)


def torch_inplace(book, op, oid, dn, where, sample, to_npu):
    """The in-place variant (add_, mul_, relu_ ...) on a copy of the input."""
    inp, args, kwargs = sample
    # writing into a self whose elements may share memory is order-
    # dependent: PyTorch's CPU result is not a reference then
    if not isinstance(inp, torch.Tensor) or \
            torch._debug_has_internal_overlap(inp) != 0:
        return
    x, a, k = capture.snapshot((inp, args, kwargs))
    try:
        op.inplace_variant(x, *a, **k)
    except Exception:
        return                  # PyTorch refuses it in place (a cast)
    y, a, k = to_npu(capture.snapshot((inp, args, kwargs)))
    oid = oid + '_'
    book.ran('torch', oid, dn)
    try:
        op.inplace_variant(y, *a, **k)
    except Exception as e:
        book.mismatch('torch', oid, dn, 'raises', first_line(e), where)
        return

    def wider(up):
        z, a, k = up(capture.snapshot((inp, args, kwargs)))
        op.inplace_variant(z, *a, **k)
        return z
    judge(book, ('torch', oid, dn), 'value', where, y, x, op, wider=wider)


def torch_errors(book, op, to_npu):
    """error_inputs on npu raise PyTorch's error."""
    if op.error_inputs_func is None:
        return
    oid = opinfo_id(op) + ' (errors)'
    for i, ei in enumerate(op.error_inputs('cpu')):
        s = ei.sample_input
        where = '%s error_inputs #%d' % (opinfo_id(op), i)
        dn = dtype_name(s.input.dtype) if isinstance(s.input, torch.Tensor) \
            else '-'
        try:    # OpInfo's generic ones (a Python scalar where the op
            # "supports" none) may be calls PyTorch's CPU takes: no verdict
            op(*capture.snapshot((s.input,) + tuple(s.args)), **s.kwargs)
            continue
        except Exception:
            pass
        n_in, n_args, n_kw = to_npu((s.input, s.args, s.kwargs))
        book.ran('torch', oid, dn)
        try:
            op(n_in, *n_args, **n_kw)
        except Exception as e:
            if not isinstance(e, ei.error_type) or \
                    not re.search(ei.error_regex, str(e)):
                book.mismatch('torch', oid, dn, 'error',
                              '%s, PyTorch %s matching %r' % (
                                  first_line(e), ei.error_type.__name__,
                                  ei.error_regex), where)
            continue
        book.mismatch('torch', oid, dn, 'accepts',
                      'accepted what PyTorch refuses: ' + ei.error_regex,
                      where)


# ---- the report -----------------------------------------------------------------

def child(front, names):
    warnings.simplefilter('ignore')
    torch.set_num_threads(1)
    opinfos = selected_opinfos()
    if names:
        opinfos = [o for o in opinfos if o.name in names]
    book = Book()
    (run_c if front == 'c' else run_torch)(opinfos, book)
    json.dump(book.dump(), sys.stdout)
    return 0


def report(results, elapsed, partial=False):
    stats, mismatches = {}, []
    for r in results:
        for front, op, dt, row in r['stats']:
            stats[(front, op, dt)] = row
        mismatches += r['mismatches']
    fronts = [('c-cpu', 'C dispatcher, cpu'), ('c-npu', 'C dispatcher, npu'),
              ('torch', 'torch_vnpu, npu')]
    print('OpInfo harness: PyTorch %s op_db samples through both front ends'
          % torch.__version__)
    print('per op and dtype: run: cases run; bad: mismatches not listed; '
          'listed: differences listed in accepted.py;\n  wider: results that '
          'miss PyTorch CPU\'s but agree with the op computed by PyTorch '
          'one precision wider, or in float64, and rounded once;\n  '
          'fallbk: calls that ran on the CPU fallback; grads: gradient '
          'checks; unrep: cases the C API cannot express')
    for tag, title in fronts:
        rows = sorted((k, v) for k, v in stats.items() if k[0] == tag)
        print('\n== %s: %d op/dtype rows' % (title, len(rows)))
        print('%-40s %-9s %6s %5s %6s %5s %6s %6s %6s' % (
            'op', 'dtype', 'run', 'bad', 'listed', 'wider', 'fallbk', 'grads',
            'unrep'))
        for (_, op, dt), v in rows:
            print('%-40s %-9s %6d %5d %6d %5d %6d %6d %6d' % (
                op, dt, v['run'], v['bad'], v['listed'], v['wider'],
                v['fallback'], v['grads'], v['unrep']))
    bad = [m for m in mismatches if not m['listed']]
    shown = {}
    if bad:
        print('\n== mismatches not listed in tests/opinfo/accepted.py')
        for m in bad:
            k = (m['front'], m['op'], m['dtype'], m['what'])
            shown[k] = shown.get(k, 0) + 1
            if shown[k] <= 3:
                print('%-6s %-36s %-9s %-8s %s: %s' % (
                    m['front'], m['op'], m['dtype'], m['what'], m['where'],
                    m['msg']))
        for k, n in shown.items():
            if n > 3:
                print('  ... %d more of %s' % (n - 3, ' '.join(k)))
    hit = {m['listed'] for m in mismatches if m['listed']}
    version = '.'.join(torch.__version__.split('.')[:2])
    stale = [k for k in ACCEPTED if '|'.join(k) not in hit and
             version in SAMPLED_BY.get(k, (version,))]
    used = {op for r in results for op in r['f32_results']}
    stale += [(op, 'float32 results') for op in F32_RESULTS if op not in used]
    if partial:
        stale = []              # only a full run sees every listed case
    if stale:
        print('\n== listed differences that no longer occur (remove them '
              'from accepted.py)')
        for k in stale:
            print('  ' + ' '.join(k))
    tot = lambda f: sum(v[f] for v in stats.values())  # noqa: E731
    reached = {op for (f, op, _) in stats if f.startswith('c-')}
    aten = [o for o in yaml_ops() if o.startswith('aten::')]
    missing = [o for o in aten if o not in reached]
    print('\naten ops of native_functions.yaml reached by the samples: %d of '
          '%d; not reached: %s' % (len(aten) - len(missing), len(aten),
                                   ' '.join(missing) or 'none'))
    print('npu:: ops (%s) have no PyTorch counterpart: '
          'tests/runtime/test_format_cast.c and tests/dispatcher/'
          'test_ops_npu.c judge them' % ' '.join(
              o for o in yaml_ops() if not o.startswith('aten::')))
    print('opinfo harness: %d cases, %d gradient checks, %d mismatches not '
          'listed, %d listed (%d entries), %d stale entries, %d agree with '
          'a wider computation only, %d fallback calls, %d not representable, %.0f s' % (
              tot('run'), tot('grads'), len(bad), tot('listed'),
              len(ACCEPTED) + len(F32_RESULTS), len(stale), tot('wider'), tot('fallback'),
              tot('unrep'), elapsed))
    return 1 if bad or stale or (missing and not partial) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--front', choices=('c', 'torch'))
    ap.add_argument('--ops', default='')
    ap.add_argument('--save', metavar='FILE',
                    help='write every count and mismatch as JSON')
    a = ap.parse_args()
    names = [n for n in a.ops.split(',') if n]
    if a.front:
        return child(a.front, names)
    t0 = time.monotonic()
    env = dict(os.environ)
    env.setdefault('VNPU_BACKEND', 'sim')
    procs = []
    for front in ('c', 'torch'):
        cmd = [sys.executable, os.path.abspath(__file__), '--front', front]
        if a.ops:
            cmd += ['--ops', a.ops]
        procs.append((front, subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)))
    results, status = [], 0
    for front, p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            last = [l for l in err.splitlines() if l.startswith(front + ' ')]
            print('opinfo harness: the %s front end died (%d) at %s:\n%s' % (
                front, p.returncode, last[-1:], err[-3000:]))
            status = 1
            continue
        results.append(json.loads(out))
    if a.save:
        with open(a.save, 'w') as f:
            json.dump(results, f)
    return report(results, time.monotonic() - t0, bool(names)) or status


if __name__ == '__main__':
    sys.exit(main())
