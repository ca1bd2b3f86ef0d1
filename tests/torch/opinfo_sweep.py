# SPDX-License-Identifier: MIT
"""Runs the first samples of every OpInfo of PyTorch's op_db in float32 on
npu and on the CPU and compares; prints one line per sample
that differs or fails, and a summary line. Run by test_opinfo_sweep.py in
a child process, so that a crash is a test failure, not a lost run."""
import sys
import warnings

import torch
from torch.testing._internal.common_methods_invocations import op_db

import torch_vnpu  # noqa: F401

NPU = torch.device('npu', 0)
SAMPLES = 3


def to(x):
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.requires_grad or x.is_conj() or \
                x.is_neg():
            return x.to(NPU)
        # the same view of the same storage on the npu: as_strided's
        # samples address the storage beyond the view (a storage offset)
        n = x.untyped_storage().nbytes() // x.element_size()
        whole = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage(), 0,
                                                   (n,), (1,))
        return whole.to(NPU).as_strided(x.size(), x.stride(),
                                         x.storage_offset())
    if isinstance(x, (list, tuple)):
        return type(x)(to(y) for y in x)
    if isinstance(x, dict):
        return {k: to(v) for k, v in x.items()}
    return x


def cpu(x):
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(cpu(y) for y in x)
    return x


def tolerance(ref):
    """1e-4, or bit for bit for the float8 dtypes (assert_close compares
    those only bitwise: they reach the npu through the CPU fallback)."""
    leaves = ref if isinstance(ref, (list, tuple)) else [ref]
    if any(isinstance(t, torch.Tensor) and t.dtype.is_floating_point and
           t.element_size() == 1 for t in leaves):
        return dict(rtol=0, atol=0)
    return dict(rtol=1e-4, atol=1e-4)


def main():
    warnings.simplefilter('ignore')
    stats = dict(agree=0, differ=0, npu_error=0, skipped=0)
    for op in op_db:
        print('op', op.name, file=sys.stderr, flush=True)
        try:
            samples = list(op.sample_inputs('cpu', torch.float32))[:SAMPLES]
        except Exception:
            stats['skipped'] += 1
            continue
        for s in samples:
            try:
                ref = op(s.input, *s.args, **s.kwargs)
            except Exception:
                stats['skipped'] += 1
                continue
            if op.name in ('empty_like', 'new_empty', 'new_empty_strided',
                           'empty', 'empty_permuted', 'empty_strided') or \
                    getattr(s.input, 'layout', torch.strided) != torch.strided:
                stats['skipped'] += 1     # uninitialised memory, sparse
                continue
            try:
                got = op(to(s.input), *to(s.args), **to(s.kwargs))
                # a non_blocking copy into (pinned) host memory is read
                # after the stream's work, as CUDA's must be
                torch.npu.synchronize()
                got = cpu(got)
            except Exception as e:
                stats['npu_error'] += 1
                print('error  %-28s %s' % (op.name, str(e).split('\n')[0][:160]))
                continue
            try:
                torch.testing.assert_close(got, ref, equal_nan=True,
                                           **tolerance(ref))
                stats['agree'] += 1
            except Exception as e:
                stats['differ'] += 1
                print('differ %-28s %s' % (op.name, str(e).split('\n')[0][:160]))
    print('opinfo sweep: %(agree)d agree, %(differ)d differ, '
          '%(npu_error)d fail on the npu only, %(skipped)d skipped' % stats)


if __name__ == '__main__':
    main()
