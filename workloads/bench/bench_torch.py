# SPDX-License-Identifier: MIT
"""PyTorch on npu against PyTorch's CPU, measured in the same run.

    PYTHONPATH=build-release "$(scripts/torch-env.sh)" workloads/bench/bench_torch.py

The four measures of docs/torch.md ("Speed"), each as the median of its
repetitions, synchronised where the npu is asynchronous, and printed as a
ratio npu / CPU (below 1: the npu is faster):

  add64      one synchronised add of two 64-float tensors
  add200     200 back-to-back adds of 64 floats, then one synchronise
  mm512      a synchronised 512x512 float32 matmul; the CPU's BLAS on all
             of the machine's cores (the simulated device uses them too)
  gpt_step   one training step (forward, backward, clipping, AdamW) of a
             small GPT with tied embeddings; the CPU on one thread

Then the same again with the other cores busy (one spinning process per
core but one), as on a machine shared with other work. The CPU baseline's
identity (PyTorch version, BLAS, threads) is printed first.
"""
import argparse
import multiprocessing
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

import torch_vnpu  # noqa: F401  (registers the npu device)


def median_seconds(fn, reps, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sync_npu():
    torch.npu.synchronize()


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                 nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, layers=2, seq=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.emb.weight   # tied

    def forward(self, idx, mask):
        x = self.emb(idx) + self.pos[:idx.shape[1]]
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def gpt_step_fn(device):
    torch.manual_seed(0)
    model = TinyGPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 256, (8, 32), device=device)
    target = torch.randint(0, 256, (8, 32), device=device)
    mask = torch.triu(torch.full((32, 32), float('-inf')), 1).to(device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(idx, mask).flatten(0, 1), target.flatten())
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if device == 'npu':
            sync_npu()
        else:
            loss.item()
    return step


def measures(reps):
    rows = []
    cores = os.cpu_count() or 1

    a, b = torch.randn(64), torch.randn(64)
    an, bn = a.npu(), b.npu()

    def add_npu():
        an + bn
        sync_npu()
    rows.append(('add64', median_seconds(add_npu, reps),
                 median_seconds(lambda: a + b, reps)))

    def add200_npu():
        for _ in range(200):
            an + bn
        sync_npu()

    def add200_cpu():
        for _ in range(200):
            a + b
    rows.append(('add200', median_seconds(add200_npu, max(reps // 10, 5)),
                 median_seconds(add200_cpu, max(reps // 10, 5))))

    x, y = torch.randn(512, 512), torch.randn(512, 512)
    xn, yn = x.npu(), y.npu()

    def mm_npu():
        xn @ yn
        sync_npu()
    torch.set_num_threads(cores)
    cpu_mm = median_seconds(lambda: x @ y, max(reps // 4, 5))
    rows.append(('mm512', median_seconds(mm_npu, max(reps // 4, 5)), cpu_mm))

    torch.set_num_threads(1)
    rows.append(('gpt_step',
                 median_seconds(gpt_step_fn('npu'), max(reps // 10, 5), 3),
                 median_seconds(gpt_step_fn('cpu'), max(reps // 10, 5), 3)))
    torch.set_num_threads(cores)
    return rows


def spin(stop):
    while not stop.is_set():
        pass


def report(title, rows):
    print(title)
    print('  %-10s %12s %12s %8s' % ('measure', 'npu', 'cpu', 'npu/cpu'))
    for name, npu, cpu in rows:
        print('  %-10s %10.1f us %10.1f us %7.2fx' % (
            name, npu * 1e6, cpu * 1e6, npu / cpu))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--reps', type=int, default=200,
                    help='repetitions of the short measures (default 200)')
    args = ap.parse_args()

    cores = os.cpu_count() or 1
    config = torch.__config__.show().splitlines()
    blas = next((ln.split('BLAS_INFO=', 1)[1].split(',')[0] for ln in config
                 if 'BLAS_INFO=' in ln), 'unknown')
    print('baseline: PyTorch %s on the CPU, %d cores; BLAS %s, oneDNN %s,'
          ' %d threads (matmul), 1 thread (GPT step)' % (
              torch.__version__, cores, blas,
              'on' if torch.backends.mkldnn.is_available() else 'off', cores))
    print('device: npu (%s backend)' % os.environ.get('VNPU_BACKEND', 'default'))
    report('quiet machine (medians):', measures(args.reps))

    stop = multiprocessing.Event()
    busy = [multiprocessing.Process(target=spin, args=(stop,))
            for _ in range(max(cores - 1, 1))]
    for p in busy:
        p.start()
    try:
        report('%d other core%s busy (medians):' % (
            len(busy), '' if len(busy) == 1 else 's'), measures(args.reps))
    finally:
        stop.set()
        for p in busy:
            p.join()
    return 0


if __name__ == '__main__':
    sys.exit(main())
