# SPDX-License-Identifier: MIT
"""Autograd through PyTorch's formulas on npu tensors, optimisers, and
reproducible random numbers."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_vnpu
from conftest import NPU


def grads_match(model, inputs, loss_fn, rtol=1e-4, atol=1e-5):
    cpu = copy.deepcopy(model)
    dev = copy.deepcopy(model).to(NPU)
    loss_fn(cpu, *inputs).backward()
    loss_fn(dev, *[x.to(NPU) for x in inputs]).backward()
    for (n, p), q in zip(cpu.named_parameters(), dev.parameters()):
        assert q.grad is not None and q.grad.device == NPU, n
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=rtol, atol=atol,
                                   msg=n)


def test_mlp_grads():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 32),
                      nn.Tanh(), nn.Linear(32, 4))
    x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
    grads_match(m, (x, y), lambda m, x, y: F.cross_entropy(m(x), y))


def test_cnn_grads():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(4 * 4 * 4, 3))
    x, y = torch.randn(5, 1, 8, 8), torch.randint(0, 3, (5,))
    grads_match(m, (x, y), lambda m, x, y: F.nll_loss(F.log_softmax(m(x), 1), y),
                rtol=1e-3, atol=1e-4)


def test_transformer_layer_grads():
    torch.manual_seed(0)
    m = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 16)
    grads_match(m, (x,), lambda m, x: m(x).pow(2).mean(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize('opt', ['sgd', 'adam'])
def test_training_loss_falls(opt):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(NPU)
    o = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if opt == 'sgd'
         else torch.optim.Adam(m.parameters(), lr=1e-2))
    x = torch.randn(64, 8)
    y = (x[:, 0] + x[:, 1] > 0).long()
    x, y = x.to(NPU), y.to(NPU)
    losses = []
    for _ in range(60):
        o.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        o.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses[::10]
    assert all(p.device == NPU for p in m.parameters())


def test_no_grad_and_views():
    w = torch.randn(4, 4, device=NPU, requires_grad=True)
    with torch.no_grad():
        y = w * 2
    assert not y.requires_grad
    v = torch.zeros(6, device=NPU)[1:5].requires_grad_()
    assert v.is_leaf and v.requires_grad
    (v * w[0]).sum().backward()
    torch.testing.assert_close(v.grad.cpu(), w[0].detach().cpu())
    x = torch.randn(3, device=NPU, requires_grad=True)
    x.detach().add_(1)          # in place on a detached alias: allowed
    with pytest.raises(RuntimeError, match='leaf Variable'):
        x.add_(1)


def test_format_cast_passes_gradients():
    w = torch.randn(32, 16, device=NPU, requires_grad=True)
    nz = torch_vnpu.npu_format_cast(w, 'FRACTAL_NZ')
    assert nz.requires_grad
    x = torch.randn(8, 16, device=NPU)
    (x @ nz.t()).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), x.sum(0).expand(32, 16).cpu())


def test_manual_seed_makes_random_ops_reproducible():
    def draw():
        torch.manual_seed(1234)
        a = torch.rand(5, device=NPU)
        b = torch.randn(5, device=NPU)
        c = F.dropout(torch.ones(100, device=NPU), 0.5)
        d = torch.empty(5, device=NPU).normal_(2, 3)
        return [t.cpu() for t in (a, b, c, d)]
    first, second = draw(), draw()
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    # npu random numbers come from PyTorch's CPU generator (docs/torch.md):
    # the same seed draws the same numbers on both devices
    torch.manual_seed(1234)
    assert torch.equal(torch.rand(5), first[0])


def test_backward_edge_cases_match_the_cpu():
    # relu's gradient at NaN passes (PyTorch: self <= 0 ? 0 : grad)
    x = torch.tensor([float('nan'), -1., 0., 2.])
    a = x.clone().requires_grad_()
    b = x.to(NPU).requires_grad_()
    torch.relu(a).sum().backward()
    torch.relu(b).sum().backward()
    assert torch.equal(b.grad.cpu(), a.grad)
    # nll_loss with every target ignored: zero gradient, not 0/0
    for red in ('mean', 'sum', 'none'):
        w = torch.randn(3, 4)
        t = torch.tensor([1, 1, 1])
        a = w.clone().requires_grad_()
        b = w.to(NPU).requires_grad_()
        la = F.nll_loss(a, t, ignore_index=1, reduction=red)
        lb = F.nll_loss(b, t.to(NPU), ignore_index=1, reduction=red)
        la.sum().backward()
        lb.sum().backward()
        assert torch.equal(b.grad.cpu(), a.grad), red
    # a NaN gradient reaches only the picked elements
    w = torch.randn(3, 4)
    t = torch.tensor([0, 2, 3])
    g = torch.tensor([1., float('nan'), 2.])
    a = w.clone().requires_grad_()
    b = w.to(NPU).requires_grad_()
    F.nll_loss(a, t, reduction='none').backward(g)
    F.nll_loss(b, t.to(NPU), reduction='none').backward(g.to(NPU))
    torch.testing.assert_close(b.grad.cpu(), a.grad, equal_nan=True)


def test_half_activation_backward_rounds_once():
    # f16/bf16 gradients are computed in float32 and rounded once, as
    # PyTorch's opmath does (before: 5 % off for sigmoid_backward in f16)
    torch.manual_seed(0)
    g, y = torch.randn(4096), torch.rand(4096)
    for dt in (torch.float16, torch.bfloat16):
        for op in (torch.ops.aten.sigmoid_backward, torch.ops.aten.tanh_backward):
            want = op(g.to(dt).float(), y.to(dt).float()).to(dt)
            got = op(g.to(dt).to(NPU), y.to(dt).to(NPU)).cpu()
            assert torch.equal(got, want), (dt, op)
        gs, x = g.view(64, 64).to(dt), torch.randn(64, 64)
        for op, fwd in ((torch.ops.aten._softmax_backward_data, torch.softmax),
                        (torch.ops.aten._log_softmax_backward_data, torch.log_softmax)):
            ys = fwd(x, 1).to(dt)
            want = op(gs.float(), ys.float(), 1, torch.float32).to(dt)
            got = op(gs.to(NPU), ys.to(NPU), 1, dt).cpu()
            assert torch.equal(got, want), (dt, op)


def test_group_norm_of_an_empty_batch_in_float64():
    # PyTorch's test_GroupNorm_empty (test_nn.py runs in float64): group
    # norm reaches batch norm with no channels, which 1.13's CPU kernel
    # divides by zero on (SIGFPE); the npu must not hand it over
    m = torch.nn.GroupNorm(2, 4).double().to(NPU)
    x = torch.randn(0, 4, 2, 2, dtype=torch.float64, device=NPU,
                    requires_grad=True)
    y = m(x)
    y.backward(torch.rand_like(y))
    assert y.shape == x.shape and x.grad.shape == x.shape
    assert torch.equal(m.weight.grad.cpu(), torch.zeros(4, dtype=torch.float64))
