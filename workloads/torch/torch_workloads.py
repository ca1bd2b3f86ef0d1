#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The PyTorch workloads: ordinary torch.nn / torch.optim programs, run on
the npu ('npu', through torch_vnpu) and on PyTorch's CPU with the
same inputs and weights, and compared. Each prints its verdict, times and
the CPU fallback report of its npu run.

  PYTHONPATH=<build dir> python3 workloads/torch/torch_workloads.py
"""
import copy
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_vnpu

NPU = torch_vnpu.device(0)
# float32 throughout: the kernel workloads' f32 limit (errors are
# measured at 2e-8..2e-7 relative to max(1, |cpu|))
TOL = 1e-5


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


def mlp():
    m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256),
                      nn.GELU(), nn.Linear(256, 10)).eval()
    x = torch.randn(64, 256)
    return m, (x,), lambda m, x: torch.softmax(m(x), 1), '[64 x 10]'


def lenet():
    m = LeNet().eval()
    x = torch.randn(8, 1, 28, 28)
    return m, (x,), lambda m, x: m(x), '[8 x 10]'


def transformer():
    m = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0,
                                   batch_first=True).eval()
    x = torch.randn(2, 16, 64)
    return m, (x,), lambda m, x: m(x), '[2 x 16 x 64]'


def error(a, b):
    a, b = a.detach().float(), b.detach().float()
    return ((a - b).abs().max() / max(1.0, b.abs().max().item())).item()


def timed(fn):
    fn()                                 # warm-up (caches, format casts)
    torch_vnpu.npu.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if isinstance(out, torch.Tensor) and out.device.type == NPU.type:
        out.cpu()
    torch_vnpu.npu.synchronize()
    return out, (time.perf_counter() - t0) * 1e3


def inference(name, build):
    torch.manual_seed(0)
    model, inputs, run, shape = build()
    dev = copy.deepcopy(model).to(NPU)
    dinputs = [x.to(NPU) for x in inputs]
    torch_vnpu.reset_fallback_report()
    with torch.no_grad():
        out_n, t_n = timed(lambda: run(dev, *dinputs))
        report = torch_vnpu.fallback_report()
        out_c, t_c = timed(lambda: run(model, *inputs))
    err = error(out_n.cpu(), out_c)
    return row(name, err, t_n, t_c, 'output ' + shape, report)


def training(name):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64),
                          nn.Tanh(), nn.Linear(64, 4))
    x = torch.randn(128, 20)
    y = (x[:, :4].argmax(1) + (x[:, 4] > 1).long()) % 4

    def loop(m, x, y, steps=60):
        opt = torch.optim.Adam(m.parameters(), lr=3e-3)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, m
    dev = copy.deepcopy(model).to(NPU)
    torch_vnpu.reset_fallback_report()
    t0 = time.perf_counter()
    ln, dev = loop(dev, x.to(NPU), y.to(NPU))
    t_n = (time.perf_counter() - t0) * 1e3
    report = torch_vnpu.fallback_report()
    t0 = time.perf_counter()
    lc, model = loop(model, x, y)
    t_c = (time.perf_counter() - t0) * 1e3
    err = max(error(p.cpu(), q) for p, q in zip(dev.parameters(),
                                                model.parameters()))
    falls = ln[-1] < 0.5 * ln[0]
    detail = '60 Adam steps, loss cpu %.4f -> %.4f, npu %.4f -> %.4f' % (
        lc[0], lc[-1], ln[0], ln[-1])
    return row(name, err, t_n, t_c, detail, report, extra_ok=falls)


def row(name, err, t_n, t_c, detail, report, extra_ok=True):
    ok = err <= TOL and extra_ok
    calls = sum(c for _, c in report)
    print('%-18s %s error %.2e (tol %.0e)  npu %9.2f ms  cpu %9.2f ms  %s' % (
        name, 'PASS' if ok else 'FAIL', err, TOL, t_n, t_c, detail))
    print('  CPU fallback: %d op%s, %d call%s%s' % (
        len(report), '' if len(report) == 1 else 's', calls,
        '' if calls == 1 else 's',
        ''.join('\n    %-34s %d' % (op, c) for op, c in report)))
    sys.stdout.flush()
    return ok


def main():
    torch.set_num_threads(1)
    print('PyTorch workloads: torch %s on %s (%s) against PyTorch\'s CPU, '
          'f32, same inputs and weights' % (
              torch.__version__, NPU, torch_vnpu.npu.get_device_name()))
    print('error: max |npu - cpu| / max(1, max |cpu|) (training: over the '
          'trained weights); time: one pass after a warm-up pass (training: '
          'the whole loop); cpu: PyTorch on one thread, for reference only')
    print()
    results = [inference('torch_mlp', mlp), inference('torch_lenet', lenet),
               inference('torch_transformer', transformer),
               training('torch_training')]
    passed = sum(results)
    print('%d passed, %d failed' % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == '__main__':
    sys.exit(main())
