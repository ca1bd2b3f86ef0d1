#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dispatcher/codegen/gen_ops.py: the yaml is the one list of kernels.

Each case writes a small native_functions.yaml and kernel source, runs the
generator and checks that a mismatch between what the yaml lists and what
the sources define is a build error naming both, and that a consistent
pair registers exactly the listed kernels.

  test_codegen.py GEN_OPS_PY
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

GEN = None

MM = 'mm(Tensor self, Tensor mat2) -> Tensor'
KERNEL = ('struct vnpu_at_tensor *vnpu_%s_mm(vnpu_keyset_t ks,\n'
          '\tstruct vnpu_at_tensor *self, struct vnpu_at_tensor *mat2)\n'
          '{\n\treturn NULL;\n}\n')


def run(yaml_text, prefixes):
    """Runs the generator; (exit status, stderr, generated source)."""
    with tempfile.TemporaryDirectory() as d:
        y = os.path.join(d, 'nf.yaml')
        c = os.path.join(d, 'kernels.c')
        with open(y, 'w') as f:
            f.write(yaml_text)
        with open(c, 'w') as f:
            f.write(''.join(KERNEL % p for p in prefixes))
        p = subprocess.run([sys.executable, GEN, '--yaml', y, '--outdir',
                            os.path.join(d, 'out'), c],
                           capture_output=True, text=True)
        gen = ''
        if p.returncode == 0:
            with open(os.path.join(d, 'out', 'vnpu_ops_gen.c')) as f:
                gen = f.read()
        return p.returncode, p.stderr, gen


def registered(gen):
    """The kernels registered for mm: an NPU kernel through its device
    check counts as the NPU kernel."""
    return sorted(re.findall(r'\(void \*\)vnpu_(\w+)_mm \}', gen) +
                  ['npu'] * len(re.findall(r'\(void \*\)npu_entry_mm \}', gen)))


class Codegen(unittest.TestCase):
    def test_listed_kernels_are_registered(self):
        rc, err, gen = run('- func: %s\n  dispatch: CPU, NPU\n' % MM,
                           ['cpu', 'npu'])
        self.assertEqual(rc, 0, err)
        self.assertEqual(registered(gen), ['cpu', 'npu'])

    def test_defined_but_not_listed(self):
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n' % MM,
                         ['cpu', 'npu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('vnpu_npu_mm is defined but dispatch does not list NPU',
                      err)
        self.assertIn('kernels.c:', err)

    def test_listed_but_not_defined(self):
        rc, err, _ = run('- func: %s\n  dispatch: CPU, NPU\n' % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('aten::mm: dispatch lists NPU but no vnpu_npu_mm is '
                      'defined', err)

    def test_autograd_must_be_declared(self):
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n' % MM,
                         ['cpu', 'autograd'])
        self.assertNotEqual(rc, 0)
        self.assertIn('autograd: True is not set', err)
        rc, err, gen = run('- func: %s\n  dispatch: CPU\n  autograd: True\n'
                           % MM, ['cpu', 'autograd'])
        self.assertEqual(rc, 0, err)
        self.assertEqual(registered(gen), ['autograd', 'cpu'])

    def test_bad_dispatch_lines(self):
        rc, err, _ = run('- func: %s\n  dispatch: CPU, Cuda\n' % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('unknown dispatch key Cuda', err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU, CPU\n' % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('a dispatch key listed twice', err)

    def test_structured_inherits(self):
        # the one base PyTorch's elementwise ops inherit; a typo is an error
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n'
                         '  structured_inherits: TensorIteratorBase\n' % MM,
                         ['cpu'])
        self.assertEqual(rc, 0, err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n'
                         '  structured_inherits: TensorIterator\n' % MM,
                         ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('structured_inherits must be TensorIteratorBase', err)

    def test_out_facts(self):
        # out_dtype takes the names torch_vnpu knows; out_no_overlap True
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  out_dtype: input\n'
                         '  out_no_overlap: True\n' % MM, ['cpu'])
        self.assertEqual(rc, 0, err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  out_dtype: bool\n'
                         % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('out_dtype must be one of casts, input', err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  out_no_overlap: False\n'
                         % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('out_no_overlap is True or absent', err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  silent_resize: True\n'
                         % MM, ['cpu'])
        self.assertEqual(rc, 0, err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  silent_resize: yes\n'
                         % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('silent_resize is True or absent', err)

    def test_kernel_facts(self):
        # mixes_devices and torch_view are True or absent; any_dtype names
        # one of the kernels torch_vnpu has for every dtype; the mixing
        # fact reaches the op table the fallback reads
        rc, err, gen = run('- func: %s\n  dispatch: CPU\n  mixes_devices: True\n'
                           '  any_dtype: copy\n  torch_view: True\n' % MM, ['cpu'])
        self.assertEqual(rc, 0, err)
        self.assertIn('unbox_mm, true }', gen)
        for key, bad, msg in (('mixes_devices', 'yes', 'mixes_devices is True or absent'),
                              ('torch_view', 'False', 'torch_view is True or absent'),
                              ('any_dtype', 'clone', 'any_dtype must be one of empty')):
            rc, err, _ = run('- func: %s\n  dispatch: CPU\n  %s: %s\n' % (MM, key, bad),
                             ['cpu'])
            self.assertNotEqual(rc, 0)
            self.assertIn(msg, err)

    def test_device_check(self):
        # an NPU kernel of two tensors is registered behind the check of
        # their devices, unless the op is TensorIterator's or NoCheck
        rc, err, gen = run('- func: %s\n  dispatch: CPU, NPU\n' % MM, ['cpu', 'npu'])
        self.assertEqual(rc, 0, err)
        self.assertIn('(void *)npu_entry_mm }', gen)
        self.assertIn('!vnpu_device_check_arg(&dc, mat2, "mat2")', gen)
        self.assertIn('(void *)vnpu_cpu_mm }', gen)
        for extra in ('  device_check: NoCheck\n',
                      '  structured_inherits: TensorIteratorBase\n'):
            rc, err, gen = run('- func: %s\n  dispatch: CPU, NPU\n%s' % (MM, extra),
                               ['cpu', 'npu'])
            self.assertEqual(rc, 0, err)
            self.assertNotIn('vnpu_device_check_arg', gen)
            self.assertIn('(void *)npu_entry_mm }', gen)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n  device_check: ExactSame\n'
                         % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('device_check is NoCheck or absent', err)

    def test_unsupported_goes_to_the_fallback(self):
        # an NPU kernel that cannot take a call says so; its entry, not the
        # kernel, sends the call to the fallback
        rc, err, gen = run('- func: %s\n  dispatch: CPU, NPU\n' % MM, ['cpu', 'npu'])
        self.assertEqual(rc, 0, err)
        entry = gen[gen.index('npu_entry_mm('):]
        entry = entry[:entry.index('\n}\n')]
        self.assertIn('r = vnpu_npu_mm(ks, self, mat2);', entry)
        self.assertIn('vnpu_at_error_code() == VNPU_AT_ERR_UNSUPPORTED', entry)
        self.assertIn('return vnpu_fallback_mm(ks, self, mat2);', entry)

    def test_argument_names_of_generated_locals(self):
        # topk's `k` once met the generated code's kernel pointer: such a
        # name is the kernel's own now, and the generator's locals refused
        rc, err, gen = run('- func: mm(Tensor self, int k) -> Tensor\n'
                           '  dispatch: CPU\n', ['cpu'])
        self.assertEqual(rc, 0, err)
        self.assertIn('const struct vnpu_kernel *kern, vnpu_keyset_t ks, '
                      'struct vnpu_at_tensor *self, int64_t k)', gen)
        self.assertNotIn('vnpu_kernel *k,', gen)
        rc, err, _ = run('- func: mm(Tensor self, Tensor kern) -> Tensor\n'
                         '  dispatch: CPU\n', ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn("an argument may not be named 'kern'", err)

    def test_replaces_torch_composite(self):
        # True or absent, and only on a CompositeExplicitAutograd op
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n'
                         '  replaces_torch_composite: True\n' % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('replaces_torch_composite needs dispatch: '
                      'CompositeExplicitAutograd', err)
        rc, err, _ = run('- func: %s\n  dispatch: CPU\n'
                         '  replaces_torch_composite: yes\n' % MM, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('replaces_torch_composite is True or absent', err)
        rc, err, _ = run('- func: %s\n  dispatch: CompositeExplicitAutograd\n'
                         '  replaces_torch_composite: True\n' % MM, ['cea'])
        self.assertEqual(rc, 0, err)

    def test_families(self):
        # a family's kernels are generated as calls of its function with
        # the op's name and code; a hand-written one is an error, and so
        # are two ops of one family that disagree on its arguments
        fam = ('- func: %s\n  dispatch: CPU, NPU\n  family: matmul(MM_CODE)\n'
               '  autograd: matmul(AG_CODE)\n' % MM)
        rc, err, gen = run(fam, [])
        self.assertEqual(rc, 0, err)
        self.assertIn('return vnpu_cpu_family_matmul(ks, "aten::mm", MM_CODE, '
                      'self, mat2);', gen)
        self.assertIn('return vnpu_npu_family_matmul(ks, "aten::mm", MM_CODE, '
                      'self, mat2);', gen)
        self.assertIn('vnpu_autograd_family_matmul(vnpu_redispatch_mm('
                      'vnpu_ag_below(ks), self, mat2), "MmBackward0", AG_CODE, '
                      'self, mat2)', gen)
        rc, err, _ = run(fam, ['cpu'])
        self.assertNotEqual(rc, 0)
        self.assertIn('vnpu_cpu_mm is generated from its family', err)
        other = ('- func: mv(Tensor self, Tensor vec, int n) -> Tensor\n'
                 '  dispatch: CPU\n  family: matmul(MV_CODE)\n')
        rc, err, _ = run(fam + other, [])
        self.assertNotEqual(rc, 0)
        self.assertIn('aten::mm and aten::mv are both of vnpu_cpu_family_matmul '
                      'but differ', err)
        for bad in ('matmul', 'matmul(A, B)', '(A)'):
            rc, err, _ = run('- func: %s\n  dispatch: CPU\n  family: %s\n'
                             % (MM, bad), [])
            self.assertNotEqual(rc, 0)
            self.assertIn('a family is name(CODE) or name()', err)

    def test_bool_lists_need_a_length(self):
        # output masks are bool[N] with 1 <= N <= 64, a bit list in C
        mask = 'mm(Tensor self, Tensor mat2, bool[%s] output_mask) -> Tensor'
        kernel = ('struct vnpu_at_tensor *vnpu_cpu_mm(vnpu_keyset_t ks,\n'
                  '\tstruct vnpu_at_tensor *self, struct vnpu_at_tensor *mat2,\n'
                  '\tstruct vnpu_at_bool_list output_mask)\n{\n\treturn NULL;\n}\n')
        global KERNEL
        saved, KERNEL = KERNEL, kernel.replace('vnpu_cpu_mm', 'vnpu_%s_mm')
        try:
            rc, err, gen = run('- func: %s\n  dispatch: CPU\n' % (mask % 3),
                               ['cpu'])
            self.assertEqual(rc, 0, err)
            self.assertIn('vnpu_iv_get_bool_list', gen)
            for bad in ('', '65'):
                rc, err, _ = run('- func: %s\n  dispatch: CPU\n' % (mask % bad),
                                 ['cpu'])
                self.assertNotEqual(rc, 0)
                self.assertIn('bool[N] needs a length N of 1 to 64', err)
        finally:
            KERNEL = saved


if __name__ == '__main__':
    GEN = sys.argv.pop(1)
    unittest.main(verbosity=2)
