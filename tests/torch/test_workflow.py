# SPDX-License-Identifier: MIT
"""A CUDA user's everyday workflow on the npu: the device's name, tied
weights through .to()/.npu() and set_data, checkpoints (torch.save/load
with map_location, pickle, deepcopy), fork after use, record_stream.
Each of these failed on torch_vnpu for PyTorch 1.13."""
import copy
import io
import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_vnpu  # noqa: F401
from conftest import NPU


def test_device_is_named_npu():
    t = torch.ones(2, device='npu')
    assert t.device == torch.device('npu:0') and t.is_npu
    assert t.type() == 'torch.npu.FloatTensor'
    assert torch.ones(2, dtype=torch.int32).npu().type() == 'torch.npu.IntTensor'
    assert torch.npu.is_available() and torch.npu.device_count() >= 1
    assert torch.npu.current_device() == 0
    assert torch.device('npu').type == 'npu'
    m = torch.nn.Linear(2, 2).npu()
    assert m.weight.is_npu
    assert 'npu' in str(t)
    assert not t.cpu().is_npu


def tied_model():
    torch.manual_seed(0)
    m = torch.nn.Module()
    m.emb = torch.nn.Embedding(16, 8)
    m.head = torch.nn.Linear(8, 16, bias=False)
    m.head.weight = m.emb.weight
    return m


@pytest.mark.parametrize('move', ['to', 'npu'])
def test_tied_weights_stay_tied(move):
    m = tied_model()
    p = m.emb.weight
    m = m.to('npu') if move == 'to' else m.npu()
    assert m.emb.weight is m.head.weight, 'the tie was broken'
    assert m.emb.weight is p, 'the Parameter was replaced, not moved'
    assert p.is_npu
    # one Parameter: a step through either use updates both
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    assert len(opt.param_groups[0]['params']) == 1
    m.cpu()
    assert m.emb.weight is m.head.weight and not p.is_npu


def test_tied_training_matches_cpu():
    losses = {}
    for dev in ('cpu', 'npu'):
        m = tied_model().to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(1)
        idx = torch.randint(0, 16, (32,), generator=g)
        curve = []
        for _ in range(20):
            x = idx.to(dev)
            loss = torch.nn.functional.cross_entropy(m.head(m.emb(x)), x)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            curve.append(loss.item())
        losses[dev] = curve
    torch.testing.assert_close(losses['npu'], losses['cpu'], rtol=1e-4,
                               atol=1e-5)


class TinyGPT(torch.nn.Module):
    """Pre-norm transformer blocks (LayerNorm, causal
    nn.MultiheadAttention, GELU MLP) with the embedding tied to the head,
    as nanoGPT builds it."""

    def __init__(self, vocab=64, d=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(seq, d))
        self.blocks = torch.nn.ModuleList(
            torch.nn.ModuleDict(dict(
                ln1=torch.nn.LayerNorm(d),
                attn=torch.nn.MultiheadAttention(d, heads, batch_first=True),
                ln2=torch.nn.LayerNorm(d),
                mlp=torch.nn.Sequential(torch.nn.Linear(d, 4 * d),
                                        torch.nn.GELU(),
                                        torch.nn.Linear(4 * d, d))))
            for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx, mask):
        x = self.emb(idx) + self.pos[:idx.shape[1]]
        for b in self.blocks:
            h = b['ln1'](x)
            x = x + b['attn'](h, h, h, attn_mask=mask, need_weights=False)[0]
            x = x + b['mlp'](b['ln2'](x))
        return self.head(self.ln(x))


def gpt_losses(dev, steps=12):
    torch.manual_seed(0)
    m = TinyGPT().to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 4))
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, 64, (4, 16), generator=g).to(dev)
    target = torch.randint(0, 64, (4, 16), generator=g).to(dev)
    mask = torch.triu(torch.full((16, 16), float('-inf')), 1).to(dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(
            m(idx, mask).flatten(0, 1), target.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_tied_gpt_trains_on_the_device_alone():
    """Issue 30's training step: forward, backward, clipping, AdamW and
    an LR schedule with every fallback refused, the CPU's loss curve."""
    want = gpt_losses('cpu')
    policy = torch_vnpu.fallback_policy()
    torch_vnpu.set_fallback_policy('error')
    try:
        got = gpt_losses('npu')
    finally:
        torch_vnpu.set_fallback_policy(policy)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_set_data_between_cpu_and_npu():
    p = torch.nn.Parameter(torch.arange(4.))
    p.data = p.data.to('npu')
    assert p.is_npu and p.cpu().tolist() == [0, 1, 2, 3]
    p.data = p.data.cpu()
    assert not p.is_npu
    with pytest.raises(RuntimeError):
        p.data = torch.ones(2, dtype=torch.int64).to_sparse()


def roundtrip(obj, **load_kwargs):
    b = io.BytesIO()
    torch.save(obj, b)
    b.seek(0)
    return torch.load(b, **load_kwargs)


@pytest.mark.parametrize('where', ['npu', 'cpu'])
def test_save_load_with_map_location(where):
    t = torch.arange(12.).reshape(3, 4)
    n = t.npu()
    v = n[1:, 2:]  # a view: shares the storage in the file too
    got = roundtrip({'t': n, 'v': v}, map_location=where)
    assert got['t'].device.type == where and got['v'].device.type == where
    assert torch.equal(got['t'].cpu(), t)
    assert torch.equal(got['v'].cpu(), t[1:, 2:])
    got['t'].fill_(-1)
    assert (got['v'].cpu() == -1).all(), 'the view lost its storage'
    # default: back where it was saved
    assert roundtrip(n).device == NPU
    # cpu -> npu
    assert roundtrip(t, map_location='npu:0').device == NPU


def test_model_and_optimizer_checkpoint_bit_identical():
    m = tied_model().npu()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    x = torch.arange(16).npu()
    m.head(m.emb(x)).sum().backward()
    opt.step()
    ckpt = roundtrip({'model': m.state_dict(), 'opt': opt.state_dict()},
                     map_location='cpu')
    for k, v in m.state_dict().items():
        assert torch.equal(ckpt['model'][k], v.cpu()), k
    back = roundtrip(ckpt, map_location='npu')
    m2 = tied_model().npu()
    m2.load_state_dict(back['model'])
    opt2 = torch.optim.AdamW(m2.parameters(), lr=1e-2)
    opt2.load_state_dict(back['opt'])
    for k, v in m.state_dict().items():
        assert torch.equal(m2.state_dict()[k].cpu(), v.cpu()), k
    s1 = opt.state_dict()['state'][0]
    s2 = opt2.state_dict()['state'][0]
    assert s2['exp_avg'].is_npu
    assert torch.equal(s1['exp_avg'].cpu(), s2['exp_avg'].cpu())


def test_pickle_and_deepcopy():
    n = torch.arange(6.).npu()
    p = pickle.loads(pickle.dumps(n))
    assert p.device == NPU and torch.equal(p.cpu(), n.cpu())
    d = copy.deepcopy(n)
    assert d.device == NPU and torch.equal(d.cpu(), n.cpu())
    d.add_(1)
    assert n.cpu().tolist() == [0, 1, 2, 3, 4, 5], 'deepcopy shared memory'
    sd = copy.deepcopy(tied_model().npu().state_dict())
    assert all(v.is_npu for v in sd.values())
    m = copy.deepcopy(tied_model().npu())
    assert m.emb.weight is m.head.weight and m.emb.weight.is_npu


def run_child(code):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(sys.path)
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)],
                          env=env, capture_output=True, text=True,
                          timeout=120)


def test_fork_after_use_is_a_clear_error_not_a_hang():
    r = run_child('''
        import os, torch, torch_vnpu
        torch.ones(2, device='npu').cpu()          # the parent uses it
        pid = os.fork()
        if pid == 0:
            try:
                torch.ones(2, device='npu').cpu()
                os._exit(1)
            except RuntimeError as e:
                os._exit(7 if 'forked' in str(e) else 2)
        _, status = os.waitpid(pid, 0)
        print('child', os.waitstatus_to_exitcode(status))
        print('parent', torch.ones(2, device='npu').sum().item())
    ''')
    assert r.returncode == 0, r.stderr
    assert 'child 7' in r.stdout and 'parent 2.0' in r.stdout, r.stdout


def test_asking_for_devices_does_not_poison_fork():
    # torch.cuda counts devices without initialising CUDA (NVML) so that
    # a process may check, then fork workers that use the device
    r = run_child('''
        import os, torch, torch_vnpu
        assert torch.npu.is_available() and torch.npu.device_count() == 1
        pid = os.fork()
        if pid == 0:
            ok = not torch.npu._is_in_bad_fork() and \\
                torch.ones(2, device='npu').sum().item() == 2
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print('child', os.waitstatus_to_exitcode(status))
        torch.ones(1, device='npu').cpu()       # now the runtime is started
        assert torch.npu.device_count() == 1
        pid = os.fork()
        if pid == 0:
            os._exit(7 if torch.npu._is_in_bad_fork() else 4)
        _, status = os.waitpid(pid, 0)
        print('second child', os.waitstatus_to_exitcode(status))
    ''')
    assert r.returncode == 0, r.stderr
    assert 'child 0' in r.stdout and 'second child 7' in r.stdout, r.stdout


def test_fork_child_that_never_touches_the_device_works():
    # a DataLoader worker: forked after the device is in use, CPU only
    r = run_child('''
        import torch, torch_vnpu
        n = torch.ones(4, device='npu')
        ds = torch.utils.data.TensorDataset(torch.arange(8.))
        dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2,
                                         multiprocessing_context='fork')
        total = sum(b[0].npu().sum().item() for b in dl)
        print('total', total + n.sum().item())
    ''')
    assert r.returncode == 0, r.stderr
    assert 'total 32.0' in r.stdout, r.stdout


def test_record_stream_keeps_memory_until_the_stream_is_done():
    s = torch.npu.Stream()
    a = torch.randn(256, 256, device='npu') / 16
    x = a.clone()  # allocated for the default stream
    want = x.cpu()
    for _ in range(4):
        want = want @ a.cpu()
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        y = x
        for _ in range(4):
            y = y @ a
    x.record_stream(s)
    del x
    # allocations of that size on the default stream must not take x's
    # block while work on s may still read it
    for _ in range(8):
        torch.full((256, 256), 7.0, device='npu')
    s.synchronize()
    torch.testing.assert_close(y.cpu(), want, rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError, match='npu stream'):
        a.record_stream(torch.Stream(device='cpu'))


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
def test_autocast_uses_pytorchs_cast_policy(dtype):
    torch.manual_seed(0)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    na, nb = a.npu(), b.npu()
    assert dtype in torch.npu.get_amp_supported_dtype()
    with torch.autocast('npu', dtype=dtype):
        mm = na @ nb                                    # lower precision
        lin = torch.nn.functional.linear(na, nb)        # lower precision
        sm = torch.softmax(mm, -1)                      # float32 (as cuda)
        s = na + nb                                     # unchanged
        # outside the npu's autocast: CPU tensors are not cast
        cpu = a @ b
    assert mm.dtype == dtype and lin.dtype == dtype
    assert sm.dtype == torch.float32 and s.dtype == torch.float32
    assert cpu.dtype == torch.float32
    ref = a.to(dtype) @ b.to(dtype)
    torch.testing.assert_close(mm.cpu(), ref, rtol=2e-2, atol=5e-2)
    with torch.autocast('npu', dtype=dtype), pytest.raises(
            RuntimeError, match='unsafe to autocast'):
        torch.nn.functional.binary_cross_entropy(torch.rand(4).npu(),
                                                 torch.rand(4).npu())


def test_grad_scaler_trains_as_unscaled_and_skips_inf_steps():
    torch.manual_seed(0)
    w0 = torch.randn(8)
    x = torch.randn(4, 8)
    ws = {}
    for dev, scaled in (('cpu', False), ('npu', True)):
        w = torch.nn.Parameter(w0.clone().to(dev))
        opt = torch.optim.SGD([w], lr=0.1)
        scaler = torch.amp.GradScaler(dev, enabled=scaled)
        for _ in range(3):
            opt.zero_grad()
            loss = (x.to(dev) @ w).square().sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        ws[dev] = w.detach().cpu()
    torch.testing.assert_close(ws['npu'], ws['cpu'])
    # an inf gradient: the step is skipped and the scale backs off
    w = torch.nn.Parameter(torch.ones(2, device='npu'))
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler('npu', init_scale=1024.0)
    scaler.scale((w * torch.tensor([float('inf'), 1.0],
                                   device='npu')).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert w.detach().cpu().tolist() == [1.0, 1.0]
    assert scaler.get_scale() == 512.0


def test_compile_aot_eager_runs_graphs_on_npu():
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                            torch.nn.Linear(16, 4)).npu()
    counter = CompileCounterWithBackend('aot_eager')
    cm = torch.compile(m, backend=counter)
    x = torch.randn(5, 8, device='npu', requires_grad=True)
    y = cm(x)
    assert counter.frame_count >= 1, 'no graph was captured'
    assert y.is_npu
    y.sum().backward()
    gx = x.grad.clone()
    x.grad = None
    m(x).sum().backward()
    torch.testing.assert_close(y, m(x))
    torch.testing.assert_close(gx, x.grad)


def test_seeds_and_rng_state():
    torch.npu.manual_seed(5)
    a = torch.randn(4, device='npu')
    torch.manual_seed(5)
    b = torch.randn(4, device='npu')
    assert torch.equal(a.cpu(), b.cpu())
    state = torch.npu.get_rng_state()
    c = torch.rand(3, device='npu')
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(3, device='npu').cpu(), c.cpu())
    assert not torch.npu._is_in_bad_fork()
    with pytest.raises(IndexError, match='out of range'):
        torch.npu.get_rng_state(torch.npu.device_count())
