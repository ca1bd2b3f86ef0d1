# SPDX-License-Identifier: MIT
"""The C dispatcher's boxed call from Python (ctypes over boxed_call.c):
PyTorch values in, PyTorch values out, so that the OpInfo harness can run
one sample through the C front end exactly as it runs it through
torch_vnpu. Arguments are bound to the dispatcher's schema by name."""
import ctypes
import os

import torch

_lib = ctypes.CDLL(os.environ['VNPU_BOXED_CALL'])
_P, _I64, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
_I64P = ctypes.POINTER(_I64)
for name, res, args in [
        ('bc_error', ctypes.c_char_p, []),
        ('bc_tensor', _P, [ctypes.c_int, ctypes.c_int, ctypes.c_int, _P, _I64,
                           ctypes.c_uint32, _I64P, _I64P, _I64]),
        ('bc_release', None, [_P]),
        ('bc_set_wrapped_number', None, [_P]),
        ('bc_meta', ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_int),
                                   ctypes.POINTER(ctypes.c_int), _I64P]),
        ('bc_read', ctypes.c_bool, [_P, _P]),
        ('bc_stack_new', _P, []),
        ('bc_stack_free', None, [_P]),
        ('bc_push_none', ctypes.c_bool, [_P]),
        ('bc_push_tensor', ctypes.c_bool, [_P, _P]),
        ('bc_push_tensor_list', ctypes.c_bool, [_P, ctypes.POINTER(_P), _I64]),
        ('bc_push_int', ctypes.c_bool, [_P, _I64]),
        ('bc_push_double', ctypes.c_bool, [_P, _D]),
        ('bc_push_bool', ctypes.c_bool, [_P, ctypes.c_bool]),
        ('bc_push_string', ctypes.c_bool, [_P, ctypes.c_char_p]),
        ('bc_push_int_list', ctypes.c_bool, [_P, _I64P, _I64]),
        ('bc_push_bool_list', ctypes.c_bool, [_P, ctypes.c_uint64,
                                              ctypes.c_uint32]),
        ('bc_push_device', ctypes.c_bool, [_P, ctypes.c_int, ctypes.c_int]),
        ('bc_push_scalar', ctypes.c_bool, [_P, ctypes.c_int, _I64, _D]),
        ('bc_call', ctypes.c_bool, [ctypes.c_char_p, _P]),
        ('bc_stack_size', ctypes.c_size_t, [_P]),
        ('bc_stack_get', ctypes.c_int, [_P, ctypes.c_size_t, _I64P,
                                        ctypes.POINTER(_D), ctypes.POINTER(_P)]),
        ('bc_stack_list_item', _P, [_P, ctypes.c_size_t, _I64]),
        ('bc_schema_nargs', ctypes.c_int, [ctypes.c_char_p]),
        ('bc_schema_arg', ctypes.c_char_p, [ctypes.c_char_p, ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_int),
                                            ctypes.POINTER(ctypes.c_int),
                                            ctypes.POINTER(ctypes.c_int)]),
        ('bc_set_requires_grad', ctypes.c_bool, [_P]),
        ('bc_backward', ctypes.c_bool, [_P, _P]),
        ('bc_grad', _P, [_P]),
        ('bc_fallback_reset', None, []),
        ('bc_fallback_calls', ctypes.c_uint64, []),
]:
    fn = getattr(_lib, name)
    fn.restype, fn.argtypes = res, args
_lib.bc_init()

CPU, NPU = 0, 1
# enum vnpu_at_dtype follows c10::ScalarType
DTYPES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3,
          torch.int64: 4,
          torch.float16: 5, torch.float32: 6, torch.float64: 7,
          torch.bool: 11, torch.bfloat16: 15}
TORCH_DTYPE = {v: k for k, v in DTYPES.items()}
# enum vnpu_type_base, enum vnpu_ivalue_tag
(T_TENSOR, T_INT, T_FLOAT, T_BOOL, T_STR, T_SCALAR, T_SCALAR_TYPE, T_DEVICE,
 T_LAYOUT, T_MEMORY_FORMAT, T_GENERATOR) = range(11)
(IV_NONE, IV_TENSOR, IV_TENSOR_LIST, IV_INT, IV_DOUBLE, IV_BOOL, IV_STRING,
 IV_INT_LIST, IV_DEVICE) = range(9)


class CError(Exception):
    """The C dispatcher refused the call (its message)."""


class Unrepresentable(Exception):
    """The sample needs something the C API has no way to say (a dtype it
    does not have, more than 8 dims, a sparse layout)."""


def _error():
    return CError(_lib.bc_error().decode(errors='replace'))


class Tensor:
    """One reference to a C dispatcher tensor."""

    def __init__(self, handle):
        self.h = handle

    def __del__(self):
        if self.h:
            _lib.bc_release(self.h)
            self.h = None

    def torch(self):
        """A CPU torch.Tensor with the same dtype, sizes and values."""
        dt, dev = ctypes.c_int(), ctypes.c_int()
        sizes = (_I64 * 8)()
        nd = _lib.bc_meta(self.h, ctypes.byref(dt), ctypes.byref(dev), sizes)
        out = torch.empty(list(sizes[:nd]), dtype=TORCH_DTYPE[dt.value])
        if not _lib.bc_read(self.h, out.data_ptr()):
            raise _error()
        return out

    def device(self):
        dt, dev = ctypes.c_int(), ctypes.c_int()
        _lib.bc_meta(self.h, ctypes.byref(dt), ctypes.byref(dev), (_I64 * 8)())
        return dev.value


def tensor(x, device):
    """x (a CPU torch.Tensor) on the C dispatcher's device, with x's
    strides and storage offset kept."""
    if x.layout != torch.strided or x.dtype not in DTYPES or x.dim() > 8:
        raise Unrepresentable('tensor %s %s %dd' % (x.layout, x.dtype, x.dim()))
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    st = x.storage()
    nelem = len(st)
    h = _lib.bc_tensor(DTYPES[x.dtype], device, 0,
                       st.data_ptr() if nelem else None, nelem, x.dim(),
                       (_I64 * 8)(*x.shape), (_I64 * 8)(*x.stride()),
                       x.storage_offset())
    if not h:
        raise _error()
    return Tensor(h)


_schemas = {}


def schema(name):
    """[(arg name, type base, is list, optional)] of the dispatcher's op
    name ("aten::add.Tensor"), or None when it has no such op."""
    if name not in _schemas:
        n = _lib.bc_schema_nargs(name.encode())
        args = None
        if n >= 0:
            args = []
            for i in range(n):
                b, lst, opt = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
                a = _lib.bc_schema_arg(name.encode(), i, ctypes.byref(b),
                                       ctypes.byref(lst), ctypes.byref(opt))
                args.append((a.decode(), b.value, bool(lst.value),
                             bool(opt.value)))
        _schemas[name] = args
    return _schemas[name]


def _push_scalar(s, v):
    if isinstance(v, torch.Tensor):
        v = v.item()
    if isinstance(v, bool):
        return _lib.bc_push_scalar(s, 3, int(v), 0.0)
    if isinstance(v, int):
        return _lib.bc_push_scalar(s, 1, v, 0.0)
    if isinstance(v, float):
        return _lib.bc_push_scalar(s, 2, 0, v)
    raise Unrepresentable('scalar %r' % (v,))


def _push(s, arg, v, device, keep):
    name, base, is_list, _ = arg
    if v is None:
        return _lib.bc_push_none(s)
    if base == T_TENSOR and is_list:
        ts = [None if t is None else tensor(t, device) for t in v]
        keep.extend(t for t in ts if t is not None)
        arr = (_P * max(1, len(ts)))(*[t.h if t else None for t in ts])
        return _lib.bc_push_tensor_list(s, arr, len(ts))
    if base == T_TENSOR:
        wrapped = isinstance(v, (bool, int, float))
        if wrapped:
            # a Python number where the schema has a Tensor: PyTorch's
            # wrapped number, a 0-dim CPU tensor whatever the device
            v, device = torch.tensor(v, dtype=torch.float64 if isinstance(
                v, float) else None), CPU
        t = tensor(v, device)
        if wrapped:
            _lib.bc_set_wrapped_number(t.h)
        keep.append(t)
        return _lib.bc_push_tensor(s, t.h)
    if is_list and base == T_BOOL:
        return _lib.bc_push_bool_list(
            s, sum(1 << i for i, e in enumerate(v) if e), len(v))
    if is_list:
        v = [int(e) for e in ([v] if isinstance(v, int) else v)]
        # a shape past the dispatcher's rank (torch_vnpu's bridge too)
        if name in ('size', 'stride') and len(v) > 8:
            raise Unrepresentable('more than 8 dims')
        return _lib.bc_push_int_list(s, (_I64 * max(1, len(v)))(*v), len(v))
    if base == T_INT:
        return _lib.bc_push_int(s, int(v))
    if base == T_FLOAT:
        return _lib.bc_push_double(s, float(v))
    if base == T_BOOL:
        return _lib.bc_push_bool(s, bool(v))
    if base == T_STR:
        return _lib.bc_push_string(s, v.encode())
    if base == T_SCALAR:
        return _push_scalar(s, v)
    if base == T_SCALAR_TYPE:
        # a torch.dtype, or its c10::ScalarType number (a traced constant)
        code = DTYPES.get(v) if isinstance(v, torch.dtype) else v
        if code not in TORCH_DTYPE:
            raise Unrepresentable('dtype %s' % v)
        return _lib.bc_push_int(s, code)
    if base == T_DEVICE:
        # factory ops make their result where the sample runs
        return _lib.bc_push_device(s, device, 0)
    raise Unrepresentable('argument %s' % name)


# PyTorch's arguments the dispatcher's schemas leave out, accepted when
# they ask for what the kernel does anyway (as torch_vnpu's bridge).
# (a traced call has c10's enum numbers: Layout::Strided 0,
# MemoryFormat::Contiguous 0 and Preserve 1)
def _torch_only_ok(name, v):
    # stable: the device's sort is stable, which either value allows
    return (v is None or (name == 'layout' and v in (torch.strided, 0)) or
            (name == 'stable' and isinstance(v, bool)) or
            (name == 'pin_memory' and not v) or
            (name == 'memory_format' and
             v in (torch.contiguous_format, torch.preserve_format, 0, 1)))


def _unpack(s, i):
    iv, dv, th = _I64(), _D(), _P()
    tag = _lib.bc_stack_get(s, i, ctypes.byref(iv), ctypes.byref(dv),
                            ctypes.byref(th))
    if tag == IV_TENSOR:
        return Tensor(th.value) if th.value else None
    if tag == IV_TENSOR_LIST:
        return [Tensor(_lib.bc_stack_list_item(s, i, j))
                for j in range(iv.value)]
    if tag == IV_INT:
        return iv.value
    if tag == IV_BOOL:
        return bool(iv.value)
    if tag == IV_DOUBLE:
        return dv.value
    return None


def call(name, bound, device, requires_grad=()):
    """Runs the dispatcher's op name on device with PyTorch's arguments
    bound ({arg name: value}, CPU tensors). Returns (returns as a list of
    Tensor / Python values, {arg name: input Tensor} of the leaves made to
    require grad). Raises CError, Unrepresentable."""
    args = schema(name)
    if args is None:
        raise Unrepresentable('no %s in the dispatcher' % name)
    ours = {a[0] for a in args}
    for k, v in bound.items():
        if k not in ours and not _torch_only_ok(k, v):
            raise Unrepresentable('%s=%r' % (k, v))
    s = _lib.bc_stack_new()
    keep, leaves = [], {}
    try:
        for a in args:
            if a[0] not in bound:
                raise Unrepresentable('argument %s not bound' % a[0])
            if not _push(s, a, bound[a[0]], device, keep):
                raise _error()
            if a[0] in requires_grad:
                leaves[a[0]] = keep[-1]
                if not _lib.bc_set_requires_grad(keep[-1].h):
                    raise _error()
        if not _lib.bc_call(name.encode(), s):
            raise _error()
        return [_unpack(s, i) for i in range(_lib.bc_stack_size(s))], leaves
    finally:
        _lib.bc_stack_free(s)


def backward(out, grad):
    """Runs the C autograd from sum(out * grad) (grad a CPU torch.Tensor)."""
    g = tensor(grad, out.device())
    if not _lib.bc_backward(out.h, g.h):
        raise _error()


def grad(t):
    h = _lib.bc_grad(t.h)
    return Tensor(h).torch() if h else None


def fallback_reset():
    _lib.bc_fallback_reset()


def fallback_calls():
    return _lib.bc_fallback_calls()
