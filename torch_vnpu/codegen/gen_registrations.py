#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates torch_vnpu's PyTorch registrations from the dispatcher's yaml.

  gen_registrations.py --yaml native_functions.yaml --out register_npu.cpp

Run by the python that has torch: as torch_npu generates RegisterNPU.cpp
from npu_native_functions.yaml, this generates ours from the file that
declares the dispatcher's ops, and checks it against the PyTorch it builds
for. Registered for PyTorch's PrivateUse1 key: a functional op as a typed kernel of
PyTorch's C++ signature (from torchgen) that converts its arguments to the
dispatcher's C types and calls the dispatcher's typed entry of the op
(csrc/typed_call.h), others as a boxed kernel that translates PyTorch's
stack by argument name (csrc/bridge.cpp). Registered are:
  - every op whose `dispatch:` lists NPU;
  - every composite op of ours for which PyTorch has only backend
    kernels (zero_, addcmul), or whose composite does not serve the npu
    (`replaces_torch_composite`), so it runs on our NPU kernels;
  - the in-place and out= variants PyTorch has of those (add_.Tensor,
    add.out) and has no composite kernel for, served by the functional
    kernel and a copy, as torchgen's wrappers for external backends; those
    of an op marked `structured_inherits: TensorIteratorBase` follow
    TensorIterator's rule for an out= that is also an input.
Ops whose composite kernel of PyTorch's refuses npu tensors
(CPU_FALLBACK_OPS) are registered to the CPU fallback.
Ops of the `npu::` namespace are defined as torch.ops.npu.* (with their
CPU kernel when the yaml lists one, and a BackendSelect kernel for
factories). Everything else reaches the CPU fallback registered last.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'dispatcher', 'codegen'))
import gen_ops  # noqa: E402

COMPOSITE = ('CompositeExplicitAutograd', 'CompositeImplicitAutograd')
# PyTorch ops whose device-generic composite kernel refuses npu tensors:
# where the PyTorch built against has such a kernel, npu tensors take the
# CPU fallback instead, registered as their PrivateUse1 kernel. (Those
# whose composite is wrong for some inputs only: csrc/composites.cpp.)
CPU_FALLBACK_OPS = {
    # mode_out checks the device type: all but CPU, CUDA and XPU refused
    'mode.values': 'CompositeExplicitAutograd',
}


class TorchOps:
    """PyTorch's schemas and which keys have kernels."""

    def __init__(self):
        import torch
        self.torch = torch
        self.schemas = {}
        for sc in torch._C._jit_get_all_schemas():
            self.schemas.setdefault(sc.name, []).append(sc)

    def find(self, qualified, overload):
        for sc in self.schemas.get(qualified, []):
            if sc.overload_name == overload:
                return sc
        return None

    def has_composite(self, qualified, overload):
        name = qualified + ('.' + overload if overload else '')
        return any(self.torch._C._dispatch_has_kernel_for_dispatch_key(name, k)
                   for k in COMPOSITE)

    def variants(self, op):
        """PyTorch's in-place and out= forms of our functional op."""
        fn = self.find('aten::' + op.name, op.overload)
        if fn is None or any(a.alias_info for a in fn.arguments):
            return []
        sig = [(a.name, str(a.type)) for a in fn.arguments]
        nret = len(fn.returns)
        found = []
        inpl = self.find('aten::' + op.name + '_', op.overload)
        if inpl is not None and nret == 1 and \
                [(a.name, str(a.type)) for a in inpl.arguments] == sig and \
                inpl.arguments[0].alias_info is not None and \
                inpl.arguments[0].alias_info.is_write:
            found.append(inpl)
        for sc in self.schemas.get('aten::' + op.name, []):
            args = sc.arguments
            if len(args) != len(sig) + nret or \
                    [(a.name, str(a.type)) for a in args[:len(sig)]] != sig:
                continue
            if all(a.alias_info is not None and a.alias_info.is_write and
                   a.kwarg_only for a in args[len(sig):]):
                found.append(sc)
        return [sc for sc in found
                if not self.has_composite(sc.name, sc.overload_name)]


def typed_signature(sc):
    """torchgen's dispatcher signature of PyTorch schema sc, as (decl,
    [(argument name, schema type)], C++ return type), or None."""
    from torchgen import local
    from torchgen.api.types import DispatcherSignature
    from torchgen.model import FunctionSchema
    try:
        with local.parametrize(use_const_ref_for_mutable_tensors=False,
                               use_ilistref_for_tensor_lists=False):
            sig = DispatcherSignature.from_schema(
                FunctionSchema.parse(str(sc).split('::', 1)[1]))
            return (sig.decl,
                    [(b.name, str(b.argument.type)) for b in sig.arguments()],
                    sig.returns_type().cpp_type())
    except Exception:  # a schema this torchgen cannot read: boxed
        return None


def same_type(ours, torch_type):
    """Whether our schema argument and PyTorch's of one name have one
    C++ form for the typed call: SymInt is int, int[1] is int[]."""
    def norm(t):
        return re.sub(r'\[\d+\]', '[]', t.replace('SymInt', 'int'))
    text = ours.typ + ('?' if ours.elem_optional else '') + \
        ('[]' if ours.is_list else '') + ('?' if ours.optional else '')
    return norm(text) == norm(torch_type)


# The dispatcher's typed C results and how they become PyTorch's.
TYPED_RETS = {'tensor', 'scalar', 'int', 'double', 'bool'}
# Our argument names the conversion treats as shapes (the dispatcher's
# 8 dims bound them; PyTorch's kernels take a longer one).
SHAPE_ARGS = {'size', 'stride'}


def typed_kernel(op, sc):
    """A typed kernel for our functional op `op` of PyTorch schema sc, as
    (its C++ text, its name), or None when the op stays boxed: it writes
    or aliases an argument, returns nothing, takes a Tensor[] (whose C++
    type, TensorList or ITensorListRef, the schema does not tell), or an
    argument whose type differs from PyTorch's."""
    if op.uninitialized or not sc.returns or \
            any(a.alias_info for a in sc.arguments) or \
            any(r.alias_info for r in sc.returns) or \
            any(str(a.type) in ('List[Tensor]', 'Tensor[]')
                for a in sc.arguments):
        return None
    if len(sc.returns) != len(op.rets):
        sys.exit("%s returns %d values, PyTorch's %d"
                 % (op.qualified, len(op.rets), len(sc.returns)))
    sig = typed_signature(sc)
    if sig is None:
        return None
    decl, torch_args, ret = sig
    torch_types = dict(torch_args)
    torch_names = [n for n, _ in torch_args]
    for a in op.args:
        if a.name not in torch_types:
            sys.exit("%s: argument %s is not in PyTorch's schema %s"
                     % (op.qualified, a.name, sc))
        if not same_type(a, torch_types[a.name]):
            return None
    if any(r.kind not in TYPED_RETS for r in op.rets):
        return None
    fn = 'typed_%s_%s' % (op.ns, op.c)
    k = 'k_%s_%s' % (op.ns, op.c)
    # PyTorch's arguments ours leaves out are checked first, as the boxed
    # kernel checks them
    checks = ['c.torch_only("%s", %s)' % (n, n)
              for n in torch_names if n not in [a.name for a in op.args]]
    checks += ['c.%s(%s, &c_%s)' % ('shape' if a.name in SHAPE_ARGS and
                                     a.kind == 'int_list' else 'in',
                                     a.name, a.name) for a in op.args]
    call = 'vnpu_redispatch_%s(npu_keys%s)' % (
        op.c, ''.join(', c_' + a.name for a in op.args))
    if len(op.rets) == 1:
        keeps = ['c.keep(r);'] if op.rets[0].kind == 'tensor' else []
        result = 'c.out(r)'
    else:
        keeps = ['c.keep(r.r%d);' % i for i, r in enumerate(op.rets)
                 if r.kind == 'tensor']
        result = '%s(%s)' % (ret, ', '.join('c.out(r.r%d)' % i
                                             for i in range(len(op.rets))))
    lam = '\n'.join(['c.run([&] {',
                     '\t\t\t    r = %s;' % call] +
                    ['\t\t\t    %s' % kp for kp in keeps] +
                    ['\t\t    })'])
    checks.append(lam)
    args = ''.join(', ' + n for n in torch_names)
    text = '\n'.join(
        [decl(name=fn),
         '{',
         '\t{',
         '\t\tTypedCall c(%s);' % k] +
        ['\t\t%sc_%s;' % (gen_ops.CTYPE[a.kind], a.name) for a in op.args] +
        ['\t\t%sr;' % op.ret_type(),
         '',
         '\t\tif (%s)' % ' &&\n\t\t    '.join(checks),
         '\t\t\treturn %s;' % result,
         '\t}',
         '\tstatic const c10::OperatorHandle h = torch_op("%s", "%s");'
         % (sc.name, sc.overload_name),
         '\treturn typed_leave_to_cpu<%s>(%s, h%s);' % (ret, k, args),
         '}',
         ''])
    return text, fn


def schema_without_ns(op):
    text = op.schema
    return text.split('::', 1)[1] if '::' in text.split('(')[0] else text


def generate(ops, yaml_name, tops):
    npu_ops = [op for op in ops if 'NPU' in op.dispatch]
    ns_ops = [op for op in ops if op.ns == 'npu']
    errors = []
    for op in ops:
        if op.ns == 'aten' and tops.find('aten::' + op.name, op.overload) is None:
            errors.append('%s is not an operator of this PyTorch' % op.qualified)
    if errors:
        sys.exit('\n'.join(errors))
    # ours where PyTorch has backend kernels only, or a composite that
    # does not serve the npu (the yaml's replaces_torch_composite)
    composite = [op for op in ops
                 if op.ns == 'aten' and len(op.dispatch) == 1 and
                 op.dispatch[0] in COMPOSITE and not op.torch_view
                 and (op.replaces_torch_composite or
                      not tops.has_composite('aten::' + op.name, op.overload))]
    served = npu_ops + composite
    names = {op.qualified for op in served}
    for name in CPU_FALLBACK_OPS:
        if 'aten::' + name in names:
            errors.append('%s: in CPU_FALLBACK_OPS and served by an NPU kernel'
                          % name)
    if errors:
        sys.exit('\n'.join(errors))
    wrong_composite = [
        name for name, key in sorted(CPU_FALLBACK_OPS.items())
        if tops.torch._C._dispatch_has_kernel_for_dispatch_key('aten::' + name, key)]
    variants = [(op, sc) for op in served if op.ns == 'aten'
                for sc in tops.variants(op)
                if sc.name + ('.' + sc.overload_name if sc.overload_name else '')
                not in names]
    typed = {}
    for op in served:
        if op.ns == 'aten':
            sc = tops.find('aten::' + op.name, op.overload)
            t = typed_kernel(op, sc)
            if t:
                typed[op.qualified] = t
    out = []
    w = out.append
    w('// SPDX-License-Identifier: MIT')
    w('// Generated from %s by torch_vnpu/codegen/gen_registrations.py;'
      % yaml_name)
    w('// do not edit. A typed kernel per functional op served by the NPU,')
    w('// a boxed one per other op.')
    w('#include "backend.h"')
    w('#include "typed_call.h"')
    w('')
    w('#include <torch/library.h>')
    w('')
    w('namespace torch_vnpu {')
    w('namespace {')
    w('')
    w('// the typed kernels call the dispatcher\'s NPU kernel of their op')
    w('const vnpu_keyset_t npu_keys = vnpu_keyset_of(VNPU_KEY_PRIVATEUSE1);')
    w('')
    w('template <const char *Name>')
    w('void npu_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,')
    w('\t\ttorch::jit::Stack *stack)')
    w('{')
    w('\trun_npu_kernel(Name, op, ks, stack);')
    w('}')
    w('')
    w('template <const char *Name>')
    w('void npu_uninitialized(const c10::OperatorHandle &op,')
    w('\t\t       c10::DispatchKeySet ks, torch::jit::Stack *stack)')
    w('{')
    w('\trun_npu_uninitialized(Name, op, ks, stack);')
    w('}')
    w('')
    w('template <const char *Name, bool TensorIterator>')
    w('void npu_variant(const c10::OperatorHandle &op, c10::DispatchKeySet ks,')
    w('\t\t torch::jit::Stack *stack)')
    w('{')
    w('\trun_npu_variant(Name, op, ks, stack, TensorIterator);')
    w('}')
    w('')
    for op in served + [o for o in ns_ops if o not in served]:
        w('constexpr char k_%s_%s[] = "%s";' % (op.ns, op.c, op.qualified))
    w('')
    for text, _ in typed.values():
        w(text)
    w('} // namespace')
    w('')
    # the yaml's out_dtype / out_no_overlap / silent_resize / any_dtype
    # keys, as data for the kernels and variants
    w('OpFacts op_facts(const char *c_name)')
    w('{')
    w('\tstatic const struct {')
    w('\t\tconst char *name;')
    w('\t\tOpFacts facts;')
    w('\t} table[] = {')
    for op in served:
        if (op.out_dtype != 'casts' or op.out_no_overlap or op.silent_resize or
                op.any_dtype):
            w('\t\t{ "%s", { OpFacts::OUT_%s, %s, %s, OpFacts::ANY_%s } },'
              % (op.qualified, op.out_dtype.upper(),
                 'true' if op.out_no_overlap else 'false',
                 'true' if op.silent_resize else 'false',
                 (op.any_dtype or 'none').upper()))
    w('\t};')
    w('')
    w('\tfor (const auto &e : table)')
    w('\t\tif (!strcmp(e.name, c_name))')
    w('\t\t\treturn e.facts;')
    w('\treturn {};')
    w('}')
    w('')

    def reg(op):
        if op.qualified in typed:
            return '\tm.impl("%s", TORCH_FN(%s));' % (
                op.name + ('.' + op.overload if op.overload else ''),
                typed[op.qualified][1])
        name = op.name + ('.' + op.overload if op.overload else '')
        kernel = 'npu_uninitialized' if op.uninitialized else 'npu_kernel'
        return ('\tm.impl("%s", torch::CppFunction::makeFromBoxedFunction<'
                '&%s<k_%s_%s>>());' % (name, kernel, op.ns, op.c))
    if ns_ops:
        w('TORCH_LIBRARY(npu, m)')
        w('{')
        for op in ns_ops:
            w('\tm.def("%s");' % schema_without_ns(op))
        w('}')
        w('')
    w('TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)')
    w('{')
    w('\t// dispatch: NPU')
    for op in npu_ops:
        if op.ns == 'aten':
            w(reg(op))
    w('\t// our composites where PyTorch has backend kernels only')
    for op in composite:
        w(reg(op))
    w('\t// in-place and out= variants, served by the functional kernel')
    for op, sc in variants:
        name = sc.name.split('::')[1] + \
            ('.' + sc.overload_name if sc.overload_name else '')
        w('\tm.impl("%s", torch::CppFunction::makeFromBoxedFunction<'
          '&npu_variant<k_%s_%s, %s>>());'
          % (name, op.ns, op.c, 'true' if op.tensor_iterator else 'false'))
    w('\t// PyTorch\'s composite kernel refuses npu tensors')
    for name in wrong_composite:
        w('\tm.impl("%s", torch::CppFunction::makeFromBoxedFunction<'
          '&cpu_fallback>());' % name)
    w('}')
    w('')
    if ns_ops:
        for key, ours in (('PrivateUse1', 'NPU'), ('CPU', 'CPU')):
            w('TORCH_LIBRARY_IMPL(npu, %s, m)' % key)
            w('{')
            for op in ns_ops:
                if ours in op.dispatch:
                    w(reg(op))
            w('}')
            w('')
        w('TORCH_LIBRARY_IMPL(npu, BackendSelect, m)')
        w('{')
        for op in ns_ops:
            if op.backend_select:
                w('\tm.impl("%s", torch::CppFunction::makeFromBoxedFunction<'
                  '&npu_backend_select>());' % op.name)
        w('}')
        w('')
    w('TORCH_LIBRARY_IMPL(_, PrivateUse1, m)')
    w('{')
    w('\tm.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());')
    w('}')
    w('')
    w('} // namespace torch_vnpu')
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--yaml', required=True)
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    try:
        ops = [gen_ops.Op(e) for e in gen_ops.parse_yaml(args.yaml)]
    except ValueError as e:
        sys.exit('%s: %s' % (args.yaml, e))
    text = generate(ops, 'dispatcher/ops/native_functions.yaml', TorchOps())
    old = None
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = f.read()
    if old != text:
        with open(args.out, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
