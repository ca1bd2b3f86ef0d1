# SPDX-License-Identifier: MIT
"""PyTorch's own calls of an OpInfo sample, at the aten level, with the
values PyTorch's CPU kernels gave them: the cases the C front end is
judged by.

Two levels, because the dispatcher has ops at both:
- the traced call (torch.jit.trace records the aten ops a Python call
  makes before any decomposition: aten::matmul, aten::cross_entropy_loss,
  aten::layer_norm stay whole), replayed on the CPU node by node;
- the dispatched calls (a TorchDispatchMode below autograd sees what the
  composites decompose into and what backward runs: aten::_softmax,
  aten::nll_loss_forward, aten::threshold_backward ...).

A call is a Call(op, args, out): op the qualified overload name
("aten::add.Tensor"), args {name: value} with every schema argument
bound (defaults filled), out what PyTorch returned.
"""
import collections
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

Call = collections.namedtuple('Call', 'op args out level')


class Raised:
    """The out of a call PyTorch refused: its exception."""

    def __init__(self, exc=None):
        self.exc = exc


def tree_map(fn, x):
    """fn applied to every value inside lists, tuples (structseqs such as
    max's values/indices too) and dicts of x, the structure kept."""
    if isinstance(x, (list, tuple)):
        return type(x)(tree_map(fn, y) for y in x)
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return fn(x)


def snapshot(x):
    """A copy of x with its own storage and x's exact geometry (views,
    overlaps, offsets kept), detached: in-place calls must not change
    what was recorded as their input. Tensors of x that share a storage
    share the copy too."""
    memo = {}

    def copy(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.layout != torch.strided:
            return t.detach().clone()
        st = t.detach().storage()
        key = (st.data_ptr(), t.dtype)
        if key not in memo or not st.data_ptr():
            memo[key] = st.clone()
        return torch.tensor([], dtype=t.dtype).set_(
            memo[key], t.storage_offset(), t.size(), t.stride())
    return tree_map(copy, x)


def qualified(schema):
    return schema.name + ('.' + schema.overload_name
                          if schema.overload_name else '')


def bind(schema, args, kwargs):
    """{name: value} of every argument of schema."""
    bound = {}
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        else:
            bound[a.name] = a.default_value
    return bound


class _Dispatched(TorchDispatchMode):
    def __init__(self, calls):
        super().__init__()
        self.calls = calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        before = bind(func._schema, snapshot(list(args)), snapshot(kwargs))
        # recorded before the call: the one that raises is the last
        self.calls.append(Call(qualified(func._schema), before, Raised(),
                               'dispatched'))
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self.calls[-1].out.exc = e
            raise
        self.calls[-1] = self.calls[-1]._replace(out=snapshot(out))
        return out


class sample_of:
    """A SampleInput-like (input, args, kwargs)."""

    def __init__(self, inp, args, kwargs):
        self.input, self.args, self.kwargs = inp, args, kwargs


def flatten(sample):
    """The tensors of (input, args, kwargs) and a function that puts new
    tensors in their places."""
    leaves = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            leaves.append(x)
            return ('__leaf__', len(leaves) - 1)
        if isinstance(x, (list, tuple)):
            return type(x)(walk(y) for y in x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    spec = walk((sample.input, list(sample.args), dict(sample.kwargs)))

    def rebuild(ts, x=spec):
        if isinstance(x, tuple) and len(x) == 2 and x[0] == '__leaf__':
            return ts[x[1]]
        if isinstance(x, (list, tuple)):
            return type(x)(rebuild(ts, y) for y in x)
        if isinstance(x, dict):
            return {k: rebuild(ts, v) for k, v in x.items()}
        return x

    return leaves, rebuild


def aten_callable(qualified_name):
    """torch.ops.ns.name.overload of "ns::name.overload"."""
    ns, rest = qualified_name.split('::')
    name, _, overload = rest.partition('.')
    return getattr(getattr(getattr(torch.ops, ns), name),
                   overload or 'default')


def call_on_cpu(call, args=None):
    """Runs call (its args, or args) through PyTorch on the CPU."""
    fn = aten_callable(call.op)
    args = call.args if args is None else args
    pos = [args[a.name] for a in fn._schema.arguments if not a.kwarg_only]
    kw = {a.name: args[a.name] for a in fn._schema.arguments if a.kwarg_only}
    return fn(*pos, **kw)


def traced(fn, sample):
    """The aten calls fn(sample) makes at the top (before decomposition),
    replayed on the CPU. Empty when the call cannot be traced (in-place
    on an input, non-tensor outputs ...)."""
    leaves, rebuild = flatten(sample)
    if not leaves or any(t.layout != torch.strided for t in leaves):
        return []

    def f(*ts):
        i, a, k = rebuild(ts)
        return fn(i, *a, **k)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            graph = torch.jit.trace(f, tuple(t.detach() for t in leaves),
                                    check_trace=False).graph
    except Exception:
        return []
    env, calls = {}, []
    for v, t in zip(graph.inputs(), leaves):
        env[v] = t.detach()
    for n in graph.nodes():
        kind = n.kind()
        ins = [env.get(v) for v in n.inputs()]
        outs = list(n.outputs())
        if kind == 'prim::Constant':
            env[outs[0]] = outs[0].toIValue()
        elif kind == 'prim::ListConstruct':
            env[outs[0]] = ins
        elif kind == 'prim::TupleConstruct':
            env[outs[0]] = tuple(ins)
        elif kind in ('prim::TupleUnpack', 'prim::ListUnpack'):
            for o, v in zip(outs, ins[0]):
                env[o] = v
        elif kind.startswith('aten::'):
            schema = torch._C.parse_schema(n.schema())
            pos = [v for v, a in zip(ins, schema.arguments) if not a.kwarg_only]
            kw = {a.name: v for v, a in zip(ins, schema.arguments)
                  if a.kwarg_only}
            # a node has every argument, kwarg-only ones too, in order
            before = {a.name: v for a, v in zip(schema.arguments,
                                                snapshot(ins))}
            try:
                out = aten_callable(qualified(schema))(*pos, **kw)
            except Exception:
                return calls
            calls.append(Call(qualified(schema), before, snapshot(out),
                              'traced'))
            if len(outs) == 1:
                env[outs[0]] = out
            else:
                for o, v in zip(outs, out):
                    env[o] = v
        else:
            return calls
    return calls


def dispatched(fn, sample, grad_seed=None):
    """The aten calls PyTorch's CPU kernels run for fn(sample) below
    autograd, and, with grad_seed, those of its backward."""
    calls = []
    leaves, rebuild = flatten(sample)
    with _Dispatched(calls):
        i, a, k = rebuild(leaves)
        try:
            out = fn(i, *a, **k)
        except Exception:
            return calls
        if grad_seed is None:
            return calls
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor) and o.requires_grad]
        ins = [t for t in leaves if t.requires_grad]
        if not outs or not ins:
            return calls
        with torch.random.fork_rng():
            torch.manual_seed(grad_seed)
            gs = [torch.randn_like(o) for o in outs]
        try:
            torch.autograd.grad(outs, ins, gs, allow_unused=True)
        except Exception:
            pass
    return calls
