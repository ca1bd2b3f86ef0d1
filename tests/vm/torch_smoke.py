#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch smoke test in the VM, through vnpu.ko (scripts/test.sh runs it
with scripts/vm.sh --host-root --user and VNPU_BACKEND=drm): a few ops
against PyTorch's CPU, one training step, the CPU fallback report and its
policy, and errors surfacing as RuntimeError. Small on purpose: under TCG
'import torch' alone takes tens of seconds; tests/torch is the full suite
(on the simulator).

Prints 'PASS name' or 'FAIL name: why' per check and 'N passed, M failed';
exits 1 when a check failed.

  VNPU_BACKEND=drm PYTHONPATH=<build dir> python3 tests/vm/torch_smoke.py
"""
import os
import sys
import time
import traceback

t0 = time.perf_counter()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_vnpu  # noqa: E402
t_import = time.perf_counter() - t0

NPU = torch_vnpu.device(0)
checks = []


def check(fn):
    checks.append(fn)
    return fn


def close(a, b, tol=1e-4):
    a, b = a.detach().cpu().float(), b.detach().float()
    err = ((a - b).abs().max() / max(1.0, b.abs().max().item())).item()
    assert err <= tol, 'error %.2e > %.0e' % (err, tol)


@check
def device_is_the_driver():
    assert torch_vnpu.npu.is_available()
    name = torch_vnpu.npu.get_device_name()
    # With VNPU_BACKEND=drm the runtime must not fall back to the simulator.
    assert 'drm' in name, 'device %r is not the drm backend' % name
    assert os.environ.get('VNPU_BACKEND') == 'drm', 'VNPU_BACKEND is not drm'


@check
def ops_match_the_cpu():
    torch.manual_seed(0)
    a, b = torch.randn(32, 48), torch.randn(48, 16)
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    da, db, dx, dw = (t.to(NPU) for t in (a, b, x, w))
    close(da @ db, a @ b)
    close((da * 2 + 1).relu(), (a * 2 + 1).relu())
    close(torch.softmax(da, 1), torch.softmax(a, 1))
    close(da.sum(0), a.sum(0))
    close(F.conv2d(dx, dw, padding=1), F.conv2d(x, w, padding=1))


@check
def one_training_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    dev = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    dev.load_state_dict(model.state_dict())
    dev.to(NPU)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    losses = []
    for m, xx, yy in ((model, x, y), (dev, x.to(NPU), y.to(NPU))):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        opt.zero_grad()
        loss = F.cross_entropy(m(xx), yy)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) < 1e-4, 'loss %r' % losses
    for p, q in zip(dev.parameters(), model.parameters()):
        assert p.device.type == NPU.type
        close(p, q)


@check
def fallback_report():
    torch_vnpu.reset_fallback_report()
    t = torch.arange(6.).to(NPU)
    # lgamma has no NPU kernel: PyTorch's CPU kernel runs and is counted
    # (from 1: lgamma(0) is inf)
    close(torch.lgamma(t + 1), torch.lgamma(torch.arange(6.) + 1))
    report = dict(torch_vnpu.fallback_report())
    assert any('lgamma' in op for op in report), 'report %r' % report
    torch_vnpu.set_fallback_policy('error')
    try:
        torch.lgamma(t)
    except RuntimeError as e:
        assert 'CPU fallback is disabled' in str(e), str(e)
    else:
        raise AssertionError('no RuntimeError under VNPU_FALLBACK=error')
    finally:
        torch_vnpu.set_fallback_policy('allow')


@check
def errors_are_runtime_errors():
    try:
        torch.ones(2, 3, device=NPU) @ torch.ones(2, 3, device=NPU)
    except RuntimeError as e:
        assert 'mat1 and mat2 shapes cannot be multiplied' in str(e), str(e)
    else:
        raise AssertionError('no RuntimeError for a shape mismatch')
    # An allocation the driver cannot satisfy: PyTorch's OOM error, a
    # RuntimeError, and the device still works after it.
    try:
        torch.empty(1 << 40, device=NPU)
    except RuntimeError as e:
        assert any(w in str(e) for w in ('too large', 'out of memory',
                                         'allocating')), str(e)
    else:
        raise AssertionError('no RuntimeError for a 4 TiB tensor')
    assert (torch.ones(3, device=NPU) * 2).cpu().tolist() == [2, 2, 2]


def main():
    print('torch %s, torch_vnpu on %s; import torch, torch_vnpu: %.1f s' % (
        torch.__version__, torch_vnpu.npu.get_device_name(), t_import))
    failed = 0
    for fn in checks:
        t = time.perf_counter()
        try:
            fn()
        except Exception as e:  # every failure is a verdict, never a crash
            failed += 1
            print('FAIL %s: %s: %s' % (fn.__name__, type(e).__name__, e))
            traceback.print_exc()
        else:
            print('PASS %s (%.1f s)' % (fn.__name__,
                                        time.perf_counter() - t))
        sys.stdout.flush()
    print('%d passed, %d failed' % (len(checks) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
