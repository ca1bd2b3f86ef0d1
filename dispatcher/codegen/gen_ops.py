#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the dispatcher's operator code from native_functions.yaml.

  gen_ops.py --yaml native_functions.yaml --outdir DIR [--require-cpu]
             [kernel sources...]

Writes DIR/vnpu_ops.h (public: typed entry points and redispatch calls),
DIR/vnpu_ops_kernels.h (kernel prototypes, fallback calls) and
DIR/vnpu_ops_gen.c (entry points, boxing/unboxing adapters, BackendSelect
kernels, registration tables). The yaml is the one list of which backend
implements each op: the kernels registered are those its `dispatch:` and
`autograd:` name. Kernel sources are scanned for definitions of
vnpu_{cpu,npu,cea,cia,autograd}_<op> only to hold the two to each other: a
listed kernel no source defines (as torchgen's error_on_missing_kernels)
and a defined kernel the yaml does not list are build errors. The kernels
of an op the yaml gives a `family:` (or an autograd family) are generated
here as calls of vnpu_<kind>_family_<name>, which the sources define.
"""
import argparse
import os
import re
import sys

# ---- the yaml subset: "- func:" entries with "key: value" lines ----------


def parse_yaml(path):
    entries = []
    cur = None
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip('\n')
            stripped = line.strip()
            if not stripped or stripped.startswith('#'):
                continue
            m = re.match(r'^- func:\s*(.+)$', line)
            if m:
                cur = {'func': m.group(1).strip(), 'line': lineno}
                entries.append(cur)
                continue
            m = re.match(r'^  (\w+):\s*(.+)$', line)
            if m and cur is not None:
                key, val = m.group(1), m.group(2).strip()
                if key not in ('dispatch', 'backend_select', 'autograd',
                               'structured_inherits', 'uninitialized',
                               'out_dtype', 'out_no_overlap', 'silent_resize',
                               'replaces_torch_composite', 'device_check',
                               'mixes_devices', 'any_dtype', 'torch_view',
                               'family', 'autograd_node'):
                    sys.exit('%s:%d: unknown key %r' % (path, lineno, key))
                cur[key] = val
                continue
            sys.exit('%s:%d: cannot parse %r' % (path, lineno, line))
    return entries

# ---- schema parsing (the same grammar as dispatcher/src/schema.c) ---------


class Arg:
    def __init__(self, typ, name, default, kwarg_only, alias, write):
        self.typ = typ          # base type text without '?' / list suffix
        self.name = name
        self.default = default
        self.kwarg_only = kwarg_only
        self.alias = alias
        self.write = write
        self.optional = False
        self.is_list = False
        self.list_len = None
        self.elem_optional = False


def parse_type(text):
    """'Tensor(a!)?' -> (base, alias, write, optional, list, len, elemopt)."""
    m = re.match(r'^(\w+)(\(([a-z])(!?)\))?(\?)?(\[(\d*)\])?(\?)?$', text)
    if not m:
        raise ValueError('bad type %r' % text)
    base, _, alias, bang, q1, lst, llen, q2 = m.groups()
    if lst is not None:
        return base, alias, bool(bang), bool(q2), True, \
            (int(llen) if llen else None), bool(q1)
    return base, alias, bool(bang), bool(q1), False, None, False


def split_top(s):
    parts, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([':
            depth += 1
        elif ch in ')]':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def parse_schema(text):
    m = re.match(r'^(?:(\w+)::)?([\w]+)(?:\.(\w+))?\((.*)\)\s*->\s*(.+)$',
                 text)
    if not m:
        raise ValueError('bad schema %r' % text)
    ns, name, overload, args_s, rets_s = m.groups()
    args, kw = [], False
    for a in split_top(args_s):
        if a == '*':
            kw = True
            continue
        mm = re.match(r'^(\S+)\s+(\w+)(?:=(.+))?$', a)
        if not mm:
            raise ValueError('bad argument %r in %r' % (a, text))
        t, n, d = mm.groups()
        base, alias, write, opt, lst, llen, eopt = parse_type(t)
        arg = Arg(base, n, d, kw, alias, write)
        arg.optional, arg.is_list, arg.list_len = opt, lst, llen
        arg.elem_optional = eopt
        args.append(arg)
    rets_s = rets_s.strip()
    if rets_s.startswith('('):
        rets_s = rets_s[1:-1]
    rets = []
    for r in split_top(rets_s):
        parts = r.split()
        base, alias, write, opt, lst, llen, eopt = parse_type(parts[0])
        ret = Arg(base, parts[1] if len(parts) > 1 else None, None, False,
                  alias, write)
        ret.optional, ret.is_list = opt, lst
        rets.append(ret)
    return ns or 'aten', name, overload or '', args, rets

# ---- C types ------------------------------------------------------------------

INTS = ('int', 'SymInt')


def kind(a):
    """A short kind string the generator switches on."""
    if a.typ == 'Tensor':
        if a.is_list:
            return 'tensor_list'
        return 'opt_tensor' if a.optional else 'tensor'
    if a.typ in INTS:
        if a.is_list:
            return 'opt_int_list' if a.optional else 'int_list'
        return 'opt_int' if a.optional else 'int'
    if a.typ == 'float' and not a.is_list:
        return 'opt_double' if a.optional else 'double'
    if a.typ == 'bool' and not a.is_list and not a.optional:
        return 'bool'
    if a.typ == 'bool' and a.is_list and not a.optional:
        if a.list_len is None or not 0 < a.list_len <= 64:
            raise ValueError('bool[N] needs a length N of 1 to 64, not %r'
                             % a.list_len)
        return 'bool_list'
    if a.typ == 'str' and not a.is_list and not a.optional:
        return 'string'
    if a.typ == 'Scalar' and not a.is_list:
        return 'opt_scalar' if a.optional else 'scalar'
    if a.typ == 'ScalarType' and not a.is_list:
        return 'dtype'
    if a.typ == 'Device' and not a.is_list:
        return 'device'
    raise ValueError('unsupported type %s%s%s' %
                     (a.typ, '[]' if a.is_list else '', '?' if a.optional else ''))


CTYPE = {
    'tensor': 'struct vnpu_at_tensor *',
    'opt_tensor': 'struct vnpu_at_tensor *',
    'tensor_list': 'struct vnpu_at_tensor_list ',
    'int': 'int64_t ',
    'opt_int': 'struct vnpu_at_opt_int ',
    'int_list': 'struct vnpu_at_int_array ',
    'opt_int_list': 'struct vnpu_at_opt_int_array ',
    'double': 'double ',
    'opt_double': 'struct vnpu_at_opt_double ',
    'bool': 'bool ',
    'bool_list': 'struct vnpu_at_bool_list ',
    'string': 'const char *',
    'scalar': 'struct vnpu_at_scalar ',
    'opt_scalar': 'struct vnpu_at_scalar ',
    'dtype': 'enum vnpu_at_dtype ',
    'device': 'struct vnpu_at_device ',
}

RET_CTYPE = {
    'tensor': 'struct vnpu_at_tensor *',
    'scalar': 'struct vnpu_at_scalar ',
    'int': 'int64_t ',
    'double': 'double ',
    'bool': 'bool ',
}

RET_ERROR = {
    'tensor': 'NULL',
    'scalar': 'VNPU_AT_SCALAR_NONEV',
    'int': '0',
    'double': '0.0',
    'bool': 'false',
}


# What an out= of the op must hold, beyond TensorIterator's cast rule (the
# `out_dtype:` key): any dtype the result casts to; the input's (amax's
# check, unary_op's); the input's and int64 (values and indices); the
# result's exactly (where); bool (isposinf); bool or uint8 (all, any); the
# input's, in the words of the indexing ops (index_select, masked_select);
# the dtype= argument's exactly when one is given, and without one the
# out='s is the dtype the op computes in (sum, mean, prod, cumsum: their
# meta functions take it), for a floating out= only (mean, whose kernel
# divides an integral out= in place: the cast rule refuses it); the
# result's, in the words of a structured kernel's generated out= check
# (linalg_vector_norm); int64 exactly (nonzero).
OUT_DTYPES = ('casts', 'input', 'unary', 'values_indices', 'result',
              'boolean', 'bytebool', 'self_result', 'self_typemeta', 'dtype_arg',
              'dtype_arg_floating', 'result_typemeta', 'long')


# The kernels torch_vnpu has for every dtype (the `any_dtype:` key), each
# PyTorch's op of that name: empty.memory_format, empty_strided, resize_,
# copy_, _copy_from, _copy_from_and_resize.
ANY_DTYPE_KINDS = ('empty', 'empty_strided', 'resize', 'copy', 'copy_from',
                   'copy_from_and_resize')


# Names the generated functions use for their own locals and parameters.
GENERATED_LOCALS = {'op', 'ks', 'kern', 's', 'ok', 'r', 'seq', 'stack', 'args', 'dc'}


class Op:
    def __init__(self, entry):
        self.entry = entry
        self.schema = entry['func']
        (self.ns, self.name, self.overload, self.args,
         self.rets) = parse_schema(self.schema)
        self.qualified = '%s::%s%s' % (self.ns, self.name,
                                       '.' + self.overload if self.overload else '')
        self.c = self.name + ('_' + self.overload if self.overload else '')
        self.dispatch = [d.strip() for d in entry.get('dispatch', '').split(',')
                         if d.strip()]
        self.backend_select = entry.get('backend_select') == 'True'
        # the CPU and NPU kernels of one family, told apart by a code
        self.family = parse_family(self.schema, entry.get('family'))
        if self.family and not set(self.dispatch) & {'CPU', 'NPU'}:
            raise ValueError('%s: family needs CPU or NPU in dispatch' % self.schema)
        # autograd: True, or the family of its autograd kernel
        ag = entry.get('autograd')
        self.autograd_family = (parse_family(self.schema, ag)
                                if ag not in (None, 'True') else None)
        self.autograd = ag is not None
        # PyTorch's node name where its number is not 0 (the overload's
        # place in derivatives.yaml)
        self.autograd_node = entry.get('autograd_node')
        if self.autograd_node is not None and (
                not self.autograd_family or
                not re.match(r'^[A-Z]\w*Backward\d+$', self.autograd_node)):
            raise ValueError('%s: autograd_node is <Name>Backward<N>, with an '
                             'autograd family' % self.schema)
        self.uninitialized = entry.get('uninitialized') == 'True'
        inherits = entry.get('structured_inherits')
        if inherits not in (None, 'TensorIteratorBase'):
            raise ValueError('%s: structured_inherits must be TensorIteratorBase'
                             % self.schema)
        self.tensor_iterator = inherits is not None
        self.out_dtype = entry.get('out_dtype', 'casts')
        if self.out_dtype not in OUT_DTYPES:
            raise ValueError('%s: out_dtype must be one of %s, not %r'
                             % (self.schema, ', '.join(OUT_DTYPES), self.out_dtype))
        if entry.get('out_no_overlap', 'True') != 'True':
            raise ValueError('%s: out_no_overlap is True or absent' % self.schema)
        self.out_no_overlap = 'out_no_overlap' in entry
        if entry.get('silent_resize', 'True') != 'True':
            raise ValueError('%s: silent_resize is True or absent' % self.schema)
        self.silent_resize = 'silent_resize' in entry
        # PyTorch's device_check: the NPU kernel of an op that TensorIterator
        # does not compute gets its tensor arguments checked to be on one
        # device (ExactSame), unless NoCheck (a copy between devices)
        if entry.get('device_check', 'NoCheck') != 'NoCheck':
            raise ValueError('%s: device_check is NoCheck or absent' % self.schema)
        self.device_check = 'device_check' not in entry and not self.tensor_iterator
        # a copy between devices: the fallback's device rule (npu and CPU
        # tensors do not mix) does not apply to it
        if entry.get('mixes_devices', 'True') != 'True':
            raise ValueError('%s: mixes_devices is True or absent' % self.schema)
        self.mixes_devices = 'mixes_devices' in entry
        # a view torch_vnpu serves with PyTorch's own device-generic kernel
        # (torch_vnpu/csrc/views.cpp), not with ours
        if entry.get('torch_view', 'True') != 'True':
            raise ValueError('%s: torch_view is True or absent' % self.schema)
        self.torch_view = 'torch_view' in entry
        # allocation and copies, the same for every dtype: torch_vnpu runs
        # them itself for a dtype the dispatcher lacks (complex)
        self.any_dtype = entry.get('any_dtype')
        if self.any_dtype not in (None,) + ANY_DTYPE_KINDS:
            raise ValueError('%s: any_dtype must be one of %s, not %r'
                             % (self.schema, ', '.join(ANY_DTYPE_KINDS), self.any_dtype))
        # a composite of ours that serves PyTorch's npu tensors even where
        # PyTorch has a composite kernel of its own (torch_vnpu registers
        # it for PrivateUse1)
        if entry.get('replaces_torch_composite', 'True') != 'True':
            raise ValueError('%s: replaces_torch_composite is True or absent'
                             % self.schema)
        self.replaces_torch_composite = 'replaces_torch_composite' in entry
        if self.replaces_torch_composite and self.dispatch != [
                'CompositeExplicitAutograd']:
            raise ValueError('%s: replaces_torch_composite needs dispatch: '
                             'CompositeExplicitAutograd' % self.schema)
        for a in self.args:
            a.kind = kind(a)
            if a.name in GENERATED_LOCALS:
                raise ValueError('%s: an argument may not be named %r (a local of the '
                                 'generated code)' % (self.schema, a.name))
        for r in self.rets:
            if r.is_list or r.optional:
                raise ValueError('%s: unsupported return type' % self.schema)
            r.kind = kind(r)
            if r.kind not in RET_CTYPE:
                raise ValueError('%s: unsupported return %s' % (self.schema, r.typ))
        if self.autograd_family and (len(self.rets) != 1 or
                                     self.rets[0].kind != 'tensor'):
            raise ValueError('%s: an autograd family needs one Tensor result'
                             % self.schema)
        for d in self.dispatch:
            if d not in DISPATCH_PREFIX:
                raise ValueError('%s: unknown dispatch key %s' % (self.schema, d))
        if len(set(self.dispatch)) != len(self.dispatch):
            raise ValueError('%s: a dispatch key listed twice' % self.schema)
        if self.backend_select and not any(a.kind == 'device' for a in self.args):
            raise ValueError('%s: backend_select needs a Device argument' % self.schema)

    def generated(self):
        """Kernel prefixes whose kernels are generated as a call of their
        family's function (vnpu_<prefix>_family_<name>)."""
        k = set()
        if self.family:
            k |= {DISPATCH_PREFIX[d] for d in self.dispatch if d in ('CPU', 'NPU')}
        if self.autograd_family:
            k.add('autograd')
        return k

    def family_of(self, pfx):
        return self.autograd_family if pfx == 'autograd' else self.family

    def family_params(self, pfx):
        """The parameters of the family function this op's kernel calls:
        a dispatch family takes the keyset, the op's name and its code; an
        autograd family the result of the call below it, the name of
        PyTorch's backward node and its code."""
        name, code = self.family_of(pfx)
        head = (['%sout' % RET_CTYPE['tensor'], 'const char *node']
                if pfx == 'autograd' else ['vnpu_keyset_t ks', 'const char *name'])
        return ', '.join(head + (['uint32_t code'] if code else []) +
                         ([self.params()] if self.args else []))

    def kernels(self):
        """Kernel prefixes the yaml lists for this op (vnpu_<prefix>_<op>)."""
        k = {DISPATCH_PREFIX[d] for d in self.dispatch}
        if self.autograd:
            k.add('autograd')
        return k

    def ret_type(self):
        if not self.rets:
            return 'void '
        if len(self.rets) == 1:
            return RET_CTYPE[self.rets[0].kind]
        return 'struct vnpu_ret_%s ' % self.c

    def ret_error(self):
        if not self.rets:
            return ''
        if len(self.rets) == 1:
            return RET_ERROR[self.rets[0].kind]
        return '(struct vnpu_ret_%s){ 0 }' % self.c

    def ret_failed(self, r):
        """A C test that result r is the error value (the op's first
        return for several)."""
        kind = self.rets[0].kind
        if len(self.rets) > 1:
            return '!%s.r0' % r
        if kind == 'scalar':
            return '%s.kind == VNPU_AT_SCALAR_NONE' % r
        return '%s == %s' % (r, RET_ERROR[kind]) if kind != 'tensor' else '!%s' % r

    def params(self):
        return ', '.join('%s%s' % (CTYPE[a.kind], a.name) for a in self.args)

    def names(self):
        return ', '.join(a.name for a in self.args)


def parse_family(schema, text):
    """'name(CODE)' or 'name()': a family function and the code that
    tells its ops apart (a C constant)."""
    if text is None:
        return None
    m = re.match(r'^(\w+)\((\w*)\)$', text)
    if not m:
        raise ValueError('%s: a family is name(CODE) or name(), not %r' % (schema, text))
    return m.group(1), m.group(2)


def node_name(op):
    """PyTorch's name of the op's backward node (torchgen: each word of
    the op's name titled, Backward0 after, unless the yaml names it)."""
    return op.autograd_node or (
        ''.join(w.title() for w in op.name.split('_')) + 'Backward0')


def family_call(op, pfx):
    """The body of a family-generated kernel."""
    name, code = op.family_of(pfx)
    rest = ([code] if code else []) + ([op.names()] if op.args else [])
    if pfx == 'autograd':
        below = 'vnpu_redispatch_%s(vnpu_ag_below(ks)%s)' % (
            op.c, ', ' + op.names() if op.args else '')
        return 'vnpu_autograd_family_%s(%s)' % (
            name, ', '.join([below, '"%s"' % node_name(op)] + rest))
    return 'vnpu_%s_family_%s(%s)' % (
        pfx, name, ', '.join(['ks', '"%s"' % op.qualified] + rest))


def family_protos(ops):
    """One prototype per family function; the ops of a family must agree
    on it."""
    protos = {}
    for op in ops:
        for pfx in sorted(op.generated()):
            fname = 'vnpu_%s_family_%s' % (pfx, op.family_of(pfx)[0])
            p = proto(op.ret_type(), fname, op.family_params(pfx))
            if protos.setdefault(fname, (p, op))[0] != p:
                raise ValueError('%s and %s are both of %s but differ in '
                                 'arguments or result' % (
                                     protos[fname][1].qualified, op.qualified, fname))
    return [p for p, _ in protos.values()]


def proto(ret, fname, params):
    return '%s%s(%s)' % (ret, fname, params if params else 'void')

# ---- generation ---------------------------------------------------------------


def gen_header(ops):
    o = []
    o.append('/* SPDX-License-Identifier: MIT */')
    o.append('/* Generated by dispatcher/codegen/gen_ops.py from')
    o.append(' * dispatcher/ops/native_functions.yaml: do not edit. */')
    o.append('#ifndef VNPU_OPS_H\n#define VNPU_OPS_H\n')
    o.append('#include "vnpu_dispatch.h"\n')
    o.append('#define VNPU_NUM_GEN_OPS %d\n' % len(ops))
    for op in ops:
        o.append('/* %s */' % op.schema)
        if len(op.rets) > 1:
            o.append('struct vnpu_ret_%s {' % op.c)
            for i, r in enumerate(op.rets):
                o.append('\t%sr%d;%s' % (RET_CTYPE[r.kind], i,
                                         ('\t/* %s */' % r.name) if r.name else ''))
            o.append('};')
        ks_params = 'vnpu_keyset_t ks' + (', ' + op.params() if op.args else '')
        o.append('typedef %s(*vnpu_fn_%s)(%s);' % (op.ret_type(), op.c, ks_params))
        o.append(proto(op.ret_type(), 'vnpu_op_' + op.c, op.params()) + ';')
        o.append(proto(op.ret_type(), 'vnpu_redispatch_' + op.c, ks_params) + ';')
        o.append('')
    o.append('#endif /* VNPU_OPS_H */')
    return '\n'.join(o) + '\n'


KPREFIX = {'cpu': 'CPU', 'npu': 'NPU', 'cea': 'CompositeExplicitAutograd',
           'cia': 'CompositeImplicitAutograd', 'autograd': 'Autograd'}
# A yaml dispatch key -> the prefix of its kernels' names.
DISPATCH_PREFIX = {v: k for k, v in KPREFIX.items() if k != 'autograd'}
KKEY = {'cpu': 'VNPU_KEY_CPU', 'npu': 'VNPU_KEY_PRIVATEUSE1',
        'cea': 'VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD',
        'cia': 'VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD',
        'autograd': 'VNPU_KEY_AUTOGRAD'}


def gen_kernels_header(ops):
    o = []
    o.append('/* SPDX-License-Identifier: MIT */')
    o.append('/* Generated by dispatcher/codegen/gen_ops.py: do not edit.')
    o.append(' * The prototype every kernel must have, by kind and op. */')
    o.append('#ifndef VNPU_OPS_KERNELS_H\n#define VNPU_OPS_KERNELS_H\n')
    o.append('#include "vnpu_ops.h"\n')
    for op in ops:
        ks_params = 'vnpu_keyset_t ks' + (', ' + op.params() if op.args else '')
        for pfx in KPREFIX:
            o.append(proto(op.ret_type(), 'vnpu_%s_%s' % (pfx, op.c), ks_params) + ';')
        o.append('/* runs the CPU fallback from inside a kernel */')
        o.append(proto(op.ret_type(), 'vnpu_fallback_' + op.c, ks_params) + ';')
        o.append('')
    o.append('/* The families: functions whose ops native_functions.yaml tells '
             'apart by a code */')
    for p in family_protos(ops):
        o.append(p + ';')
    o.append('')
    o.append('#endif /* VNPU_OPS_KERNELS_H */')
    return '\n'.join(o) + '\n'


def push_code(a, stack='&s'):
    k, n = a.kind, a.name
    if k == 'tensor' or k == 'opt_tensor':
        return 'ok = ok && (%s ? vnpu_stack_push_tensor(%s, %s) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    if k == 'tensor_list':
        return 'ok = ok && vnpu_stack_push_tensor_list(%s, %s);' % (stack, n)
    if k == 'int':
        return 'ok = ok && vnpu_stack_push_int(%s, %s);' % (stack, n)
    if k == 'opt_int':
        return 'ok = ok && (%s.has ? vnpu_stack_push_int(%s, %s.v) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    if k == 'int_list':
        return 'ok = ok && vnpu_stack_push_int_list(%s, %s);' % (stack, n)
    if k == 'opt_int_list':
        return 'ok = ok && (%s.has ? vnpu_stack_push_int_list(%s, %s.a) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    if k == 'double':
        return 'ok = ok && vnpu_stack_push_double(%s, %s);' % (stack, n)
    if k == 'opt_double':
        return 'ok = ok && (%s.has ? vnpu_stack_push_double(%s, %s.v) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    if k == 'bool':
        return 'ok = ok && vnpu_stack_push_bool(%s, %s);' % (stack, n)
    if k == 'bool_list':
        return 'ok = ok && vnpu_stack_push_bool_list(%s, %s);' % (stack, n)
    if k == 'string':
        return 'ok = ok && vnpu_stack_push_string(%s, %s);' % (stack, n)
    if k in ('scalar', 'opt_scalar'):
        return 'ok = ok && vnpu_stack_push_scalar(%s, %s);' % (stack, n)
    if k == 'dtype':
        return 'ok = ok && (%s != VNPU_AT_DTYPE_NONE ? vnpu_stack_push_int(%s, %s) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    if k == 'device':
        return 'ok = ok && (%s.type != VNPU_AT_DEVICE_NONE ? vnpu_stack_push_device(%s, %s) : vnpu_stack_push_none(%s));' % (n, stack, n, stack)
    raise ValueError(k)


def unbox_code(a, idx):
    """Reads argument idx (from the bottom of the N args) into a C local."""
    k = a.kind
    v = '&args[%d]' % idx
    q = '"%s"' % a.name
    return '\t%sa%d;\n\tif (!vnpu_iv_get_%s(op, %s, %s, &a%d))\n\t\treturn;' % (
        CTYPE[k], idx, k, v, q, idx)


def checks_devices(op):
    """Whether op's NPU kernel is called through a device check: one that
    takes two tensors or more (a list counts as more)."""
    tens = [a for a in op.args if a.kind in ('tensor', 'opt_tensor', 'tensor_list')]
    return ('NPU' in op.dispatch and op.device_check and
            (len(tens) > 1 or any(a.kind == 'tensor_list' for a in tens)))


def gen_source(ops):
    o = []
    o.append('/* SPDX-License-Identifier: MIT */')
    o.append('/* Generated by dispatcher/codegen/gen_ops.py from')
    o.append(' * dispatcher/ops/native_functions.yaml: do not edit. */')
    o.append('#include "dispatch_internal.h"')
    o.append('#include "autograd.h"')
    o.append('#include "vnpu_ops_kernels.h"\n')
    o.append('struct vnpu_op *vnpu_gen_ops[VNPU_NUM_GEN_OPS];\n')
    for i, op in enumerate(ops):
        n = len(op.args)
        nr = len(op.rets)
        ks_params = 'vnpu_keyset_t ks' + (', ' + op.params() if op.args else '')
        call_names = 'ks' + (', ' + op.names() if op.args else '')
        rt = op.ret_type()
        # stack -> unboxed (boxed adapter of an unboxed kernel)
        o.append('static void unbox_%s(const struct vnpu_kernel *kern, const struct vnpu_op *op,' % op.c)
        o.append('\t\tvnpu_keyset_t ks, struct vnpu_stack *stack)')
        o.append('{')
        o.append('\tstruct vnpu_ivalue *args;\n')
        o.append('\tif (!vnpu_stack_has(op, stack, %d))\n\t\treturn;' % n)
        o.append('\targs = stack->v + stack->size - %d;' % n)
        o.append('\t(void)args;')
        for j, a in enumerate(op.args):
            o.append(unbox_code(a, j))
        cargs = 'ks' + ''.join(', a%d' % j for j in range(n))
        if not op.rets:
            o.append('\t((vnpu_fn_%s)kern->unboxed)(%s);' % (op.c, cargs))
            o.append('\tvnpu_stack_drop(stack, %d);' % n)
        else:
            o.append('\t%sr = ((vnpu_fn_%s)kern->unboxed)(%s);' % (rt, op.c, cargs))
            o.append('\tvnpu_stack_drop(stack, %d);' % n)
            if nr == 1:
                o.append('\tvnpu_iv_push_ret_%s(stack, r);' % op.rets[0].kind)
            else:
                for j, r in enumerate(op.rets):
                    o.append('\tvnpu_iv_push_ret_%s(stack, r.r%d);' % (r.kind, j))
        o.append('}\n')
        # typed -> boxed (unboxing adapter of a boxed kernel)
        o.append('static %sbox_%s(const struct vnpu_op *op, const struct vnpu_kernel *kern, %s)' % (rt, op.c, ks_params))
        o.append('{')
        o.append('\tstruct vnpu_stack s;\n\tbool ok = true;\n\tuint64_t seq = vnpu_error_seq();')
        if op.rets:
            o.append('\t%sr = %s;' % (rt, op.ret_error()))
        o.append('\n\tvnpu_stack_init(&s);')
        for a in op.args:
            o.append('\t' + push_code(a))
        o.append('\tif (ok)\n\t\tkern->boxed(kern, op, ks, &s);')
        o.append('\tif (ok && vnpu_error_seq() == seq && vnpu_stack_returns_ok(op, &s, %d)) {' % nr)
        if nr == 1:
            o.append('\t\tvnpu_iv_take_ret_%s(&s.v[0], &r);' % op.rets[0].kind)
        else:
            for j, r in enumerate(op.rets):
                o.append('\t\tvnpu_iv_take_ret_%s(&s.v[%d], &r.r%d);' % (r.kind, j, j))
        o.append('\t}')
        o.append('\tvnpu_stack_destroy(&s);')
        if op.rets:
            o.append('\treturn r;')
        o.append('}\n')
        # key extraction
        tens = [a for a in op.args if a.kind in ('tensor', 'opt_tensor', 'tensor_list')]
        keys = []
        for a in tens:
            if a.kind == 'tensor_list':
                keys.append('vnpu_list_keys(%s)' % a.name)
            else:
                keys.append('vnpu_keys_of(%s)' % a.name)
        keyexpr = ' | '.join(keys) if keys else '0'
        req = [a for a in op.args if a.kind == 'tensor']
        def body(entry):
            b = []
            b.append('\tconst struct vnpu_op *op = vnpu_gen_ops[%d];' % i)
            b.append('\tconst struct vnpu_kernel *kern;\n')
            for a in req:
                b.append('\tif (__builtin_expect(!%s, 0))' % a.name)
                b.append('\t\treturn vnpu_null_arg(op, "%s"), %s;' % (a.name, op.ret_error()) if op.rets else
                         '\t\treturn (void)vnpu_null_arg(op, "%s");' % a.name)
            if entry:
                b.append('\tvnpu_keyset_t ks = vnpu_dispatch_keyset(op, %s);' % keyexpr)
            else:
                b.append('\tks &= op->non_fallthrough;')
            b.append('\tkern = vnpu_dispatch_kernel(op, ks);')
            ret = 'return ' if op.rets else ''
            b.append('\tif (__builtin_expect(kern->unboxed != NULL, 1))')
            b.append('\t\t%s((vnpu_fn_%s)kern->unboxed)(%s);' % (ret, op.c, call_names))
            if op.rets:
                b.append('\treturn box_%s(op, kern, %s);' % (op.c, call_names))
            else:
                b.append('\tbox_%s(op, kern, %s);' % (op.c, call_names))
            return b
        o.append(proto(rt, 'vnpu_op_' + op.c, op.params()))
        o.append('{')
        o.extend(body(True))
        o.append('}\n')
        o.append(proto(rt, 'vnpu_redispatch_' + op.c, ks_params))
        o.append('{')
        o.extend(body(False))
        o.append('}\n')
        # typed call of the CPU fallback from inside a kernel
        o.append(proto(rt, 'vnpu_fallback_' + op.c, ks_params))
        o.append('{')
        o.append('\tstatic const struct vnpu_kernel fallback = {')
        o.append('\t\t.boxed = vnpu_kernel_call_user_boxed,')
        o.append('\t\t.user_boxed = vnpu_cpu_fallback,')
        o.append('\t};\n')
        ret = 'return ' if op.rets else ''
        o.append('\t%sbox_%s(vnpu_gen_ops[%d], &fallback, %s);' % (ret, op.c, i, call_names))
        o.append('}\n')
        if op.backend_select:
            dev = [a for a in op.args if a.kind == 'device'][0]
            o.append('static %sbselect_%s(%s)' % (rt, op.c, ks_params))
            o.append('{')
            o.append('\t%svnpu_redispatch_%s(vnpu_backend_keyset(%s), %s);' %
                     (ret, op.c, dev.name, op.names()))
            o.append('}\n')
    # the kernels native_functions.yaml gives as a family and a code
    for op in ops:
        ks_params = 'vnpu_keyset_t ks' + (', ' + op.params() if op.args else '')
        for pfx in sorted(op.generated()):
            o.append(proto(op.ret_type(), 'vnpu_%s_%s' % (pfx, op.c), ks_params))
            o.append('{')
            o.append('\treturn %s;' % family_call(op, pfx))
            o.append('}\n')
    # every NPU kernel is reached through its entry: the device check
    # (dispatcher/src/device_check.c) where PyTorch's wrapper has one, and
    # a call the kernel cannot take (VNPU_AT_ERR_UNSUPPORTED: a dtype, a
    # layout it lacks) sent to the fallback, which the front end's policy
    # runs, refuses or leaves to it: kernels never fall back themselves
    for i, op in enumerate(ops):
        if 'NPU' not in op.dispatch:
            continue
        ks_params = 'vnpu_keyset_t ks' + (', ' + op.params() if op.args else '')
        call_names = 'ks' + (', ' + op.names() if op.args else '')
        o.append('static %snpu_entry_%s(%s)' % (op.ret_type(), op.c, ks_params))
        o.append('{')
        if checks_devices(op):
            o.append('\tstruct vnpu_device_check dc = { .op = vnpu_gen_ops[%d] };' % i)
        o.append('\tuint64_t seq = vnpu_error_seq();')
        o.append('\t%sr;\n' % op.ret_type())
        if checks_devices(op):
            conds = []
            for a in op.args:
                if a.kind == 'tensor_list':
                    conds.append('!vnpu_device_check_list(&dc, %s, "%s")' % (a.name, a.name))
                elif a.kind in ('tensor', 'opt_tensor'):
                    conds.append('!vnpu_device_check_arg(&dc, %s, "%s")' % (a.name, a.name))
            o.append('\tif (' + ' ||\n\t    '.join(conds) + ')')
            o.append('\t\treturn %s;' % op.ret_error())
        o.append('\tr = vnpu_npu_%s(%s);' % (op.c, call_names))
        o.append('\tif (__builtin_expect(%s, 0) &&' % op.ret_failed('r'))
        o.append('\t    vnpu_at_error_code() == VNPU_AT_ERR_UNSUPPORTED) {')
        o.append('\t\tvnpu_error_retract(seq);')
        o.append('\t\treturn vnpu_fallback_%s(%s);' % (op.c, call_names))
        o.append('\t}')
        o.append('\treturn r;')
        o.append('}\n')
    # registration tables
    o.append('const struct vnpu_gen_op_def vnpu_gen_op_defs[VNPU_NUM_GEN_OPS] = {')
    for i, op in enumerate(ops):
        o.append('\t{ "%s::%s", unbox_%s, %s },' % (op.ns, op.schema.split('::')[-1], op.c,
                                                 'true' if op.mixes_devices else 'false'))
    o.append('};\n')
    o.append('const struct vnpu_gen_kernel vnpu_gen_kernels[] = {')
    count = 0
    for i, op in enumerate(ops):
        for pfx in KPREFIX:
            if pfx in op.kernels():
                fn = ('npu_entry_' + op.c if pfx == 'npu'
                      else 'vnpu_%s_%s' % (pfx, op.c))
                o.append('\t{ %d, %s, (void *)%s },' % (i, KKEY[pfx], fn))
                count += 1
        if op.backend_select:
            o.append('\t{ %d, VNPU_KEY_BACKEND_SELECT, (void *)bselect_%s },' % (i, op.c))
            count += 1
    o.append('};')
    o.append('const size_t vnpu_gen_num_kernels = %d;' % count)
    return '\n'.join(o) + '\n'


# The return type may stand on the line before the name (GNU style): a
# definition missed here would silently leave its kernel unregistered.
DEF_RE = re.compile(r'^(?:[A-Za-z_][\w \t\*]*?[\s\*])?vnpu_(cpu|npu|cea|cia|autograd)_(\w+)\s*\(')


def scan(paths, ops):
    """Kernel definitions: a line at column 0 naming vnpu_<kind>_<op>( whose
    declaration is followed by '{' before any ';'."""
    cnames = {op.c for op in ops}
    found = {}
    for p in paths:
        with open(p) as f:
            text = f.read()
        lines = text.split('\n')
        for no, line in enumerate(lines):
            m = DEF_RE.match(line)
            if not m or line.startswith(('static', 'extern', '#', 'typedef')):
                continue
            rest = '\n'.join(lines[no:no + 30])
            semi, brace = rest.find(';'), rest.find('{')
            if brace < 0 or (0 <= semi < brace):
                continue
            pfx, c = m.group(1), m.group(2)
            if c.startswith('family_'):
                continue
            if c not in cnames:
                sys.exit('%s:%d: vnpu_%s_%s defines a kernel for an operator '
                         'native_functions.yaml does not declare' % (p, no + 1, pfx, c))
            if (pfx, c) in found:
                sys.exit('%s:%d: vnpu_%s_%s defined twice (also %s)' %
                         (p, no + 1, pfx, c, found[(pfx, c)]))
            found[(pfx, c)] = '%s:%d' % (p, no + 1)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--yaml', required=True)
    ap.add_argument('--outdir', required=True)
    ap.add_argument('--require-cpu', action='store_true',
                    help='fail unless every op has a CPU or composite kernel')
    ap.add_argument('sources', nargs='*')
    args = ap.parse_args()
    try:
        ops = [Op(e) for e in parse_yaml(args.yaml)]
        family_protos(ops)
    except ValueError as e:
        sys.exit('%s: %s' % (args.yaml, e))
    seen = {}
    for op in ops:
        if op.c in seen:
            sys.exit('%s: %s and %s have the same C name %s' %
                     (args.yaml, seen[op.c], op.qualified, op.c))
        seen[op.c] = op.qualified
    found = scan(args.sources, ops)
    errors = []
    for op in ops:
        for pfx in sorted(op.generated()):
            if (pfx, op.c) in found:
                errors.append('%s: vnpu_%s_%s is generated from its family in '
                              'native_functions.yaml: remove the definition'
                              % (found[(pfx, op.c)], pfx, op.c))
            found[(pfx, op.c)] = 'generated'
    for op in ops:
        listed = op.kernels()
        for pfx in sorted(listed):
            if (pfx, op.c) not in found:
                errors.append('%s: %s but no vnpu_%s_%s is defined' %
                              (op.qualified,
                               'autograd: True' if pfx == 'autograd'
                               else 'dispatch lists ' + KPREFIX[pfx],
                               pfx, op.c))
        for pfx in KPREFIX:
            if (pfx, op.c) in found and pfx not in listed:
                errors.append('%s: vnpu_%s_%s is defined but %s: add it to '
                              'the op in native_functions.yaml (or remove it)'
                              % (found[(pfx, op.c)], pfx, op.c,
                                 'autograd: True is not set' if pfx == 'autograd'
                                 else 'dispatch does not list ' + KPREFIX[pfx]))
        if args.require_cpu and not listed & {'cpu', 'cea', 'cia'}:
            errors.append('%s: no CPU kernel (vnpu_cpu_%s) nor composite'
                          % (op.qualified, op.c))
    if errors:
        sys.exit('\n'.join(errors))
    os.makedirs(args.outdir, exist_ok=True)

    def write(name, text):
        path = os.path.join(args.outdir, name)
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old != text:
            with open(path, 'w') as f:
                f.write(text)
    write('vnpu_ops.h', gen_header(ops))
    write('vnpu_ops_kernels.h', gen_kernels_header(ops))
    write('vnpu_ops_gen.c', gen_source(ops))


if __name__ == '__main__':
    main()
