# SPDX-License-Identifier: MIT
"""torchvision's own models on npu against the CPU (docs/torch.md, "Real
models"): random weights, small inputs, BatchNorm and Dropout in train mode.

Each model runs a training step on both devices from the same weights, with
the same seed before the forward (npu's random draws come from the CPU
generator, so Dropout drops the same elements): the loss, every gradient,
the BatchNorm statistics and the parameters after the optimizer's steps
agree within float32 rounding of a different summation order, and no op
of the step falls back to the CPU. A checkpoint of the trained npu model
and its optimizer loads on the CPU and back on npu bit-identically.
"""
import copy
import io

import pytest
import torch
import torch.nn.functional as F
import torchvision

import torch_vnpu  # registers the npu device

BATCH = 2
CLASSES = 10


def resnet18():
    return torchvision.models.resnet18(num_classes=CLASSES), 64


def mobilenet_v3_small():
    return torchvision.models.mobilenet_v3_small(num_classes=CLASSES), 64


def vit_b_16():
    # 32x32 images: 4 patches and the class token, the full-size encoder
    m = torchvision.models.vit_b_16(image_size=32, num_classes=CLASSES)
    # torchvision starts the head at zero, which would leave every other
    # gradient zero in the first step
    torch.nn.init.normal_(m.heads.head.weight, std=0.02)
    return m, 32


MODELS = [resnet18, mobilenet_v3_small, vit_b_16]

# ops an eval forward may still send to the CPU fallback, with the reason
EVAL_FALLBACKS = {
    # nn.MultiheadAttention's inference fast path, which PyTorch 2.6 takes
    # for npu tensors under no_grad (2.13 does not): one fused op the
    # device has no kernel or decomposition for yet
    'aten::_native_multi_head_attention': 'PyTorch 2.6 only',
}


def max_rel_diff(cpu, npu):
    """Largest difference relative to the tensor's magnitude."""
    npu = npu.detach().cpu()
    scale = cpu.detach().abs().max().item() + 1e-6
    return (cpu.detach() - npu).abs().max().item() / scale


def assert_close(cpu, npu, what, rtol, atol):
    assert npu.device.type == "npu", what
    npu = npu.detach().cpu()
    cpu = cpu.detach()
    if not cpu.is_floating_point():  # num_batches_tracked
        assert torch.equal(cpu, npu), what
        return
    err = ((cpu - npu).abs() / (atol + rtol * cpu.abs())).max().item()
    assert err <= 1, f"{what}: {err:.3g} times the tolerance"


def forward_backward(model, x, y):
    torch.manual_seed(100)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.item()


def sgd(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-3)


@pytest.mark.parametrize("make", MODELS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("optimizer", [sgd, adamw], ids=["sgd", "adamw"])
def test_train_step_matches_cpu(make, optimizer):
    """Loss, every gradient and BatchNorm statistic, then two optimizer
    steps. The steps get the CPU's gradients on both devices: an update
    such as Adam's divides a gradient by its own size, so a gradient that is
    zero in exact arithmetic (a key bias in attention, a bias under
    BatchNorm) and rounding noise on both devices would otherwise step
    differently on each, as it does between any two devices."""
    torch.manual_seed(0)
    cpu_model, size = make()
    npu_model = copy.deepcopy(cpu_model).npu()
    x = torch.randn(BATCH, 3, size, size)
    y = torch.randint(0, CLASSES, (BATCH,))

    cpu_loss = forward_backward(cpu_model, x, y)
    torch_vnpu.reset_fallback_report()
    npu_loss = forward_backward(npu_model, x.npu(), y.npu())
    assert npu_loss == pytest.approx(cpu_loss, rel=1e-5)

    cpu_params = dict(cpu_model.named_parameters())
    npu_params = dict(npu_model.named_parameters())
    grad_max = max(p.grad.abs().max().item() for p in cpu_params.values())
    for name, p in cpu_params.items():
        assert_close(p.grad, npu_params[name].grad, f"{name}.grad",
                     rtol=1e-3, atol=1e-5 * grad_max)
    npu_buffers = dict(npu_model.named_buffers())
    for name, b in cpu_model.named_buffers():
        assert_close(b, npu_buffers[name], name, rtol=1e-4, atol=1e-6)

    for name, p in cpu_params.items():
        npu_params[name].grad.copy_(p.grad)
    cpu_opt = optimizer(cpu_model.parameters())
    npu_opt = optimizer(npu_model.parameters())
    for _ in range(2):
        cpu_opt.step()
        npu_opt.step()
    for name, p in cpu_params.items():
        assert_close(p, npu_params[name], name, rtol=1e-5, atol=1e-7)
    # the forward, backward and optimizer steps ran on the device alone
    assert torch_vnpu.fallback_report() == []


@pytest.mark.parametrize("make", MODELS, ids=lambda f: f.__name__)
def test_eval_forward_matches_cpu(make):
    torch.manual_seed(1)
    cpu_model, size = make()
    cpu_model.eval()
    npu_model = copy.deepcopy(cpu_model).npu()
    x = torch.randn(BATCH, 3, size, size)
    with torch.no_grad():
        want = cpu_model(x)
        torch_vnpu.reset_fallback_report()
        got = npu_model(x.npu())
    assert got.device.type == "npu"
    assert max_rel_diff(want, got) < 1e-4
    fell_back = {op for op, _ in torch_vnpu.fallback_report()}
    assert fell_back - set(EVAL_FALLBACKS) == set(), fell_back


@pytest.mark.parametrize("make", [resnet18], ids=lambda f: f.__name__)
def test_checkpoint_round_trip_bit_identical(make):
    torch.manual_seed(2)
    model, size = make()
    model = model.npu()
    x = torch.randn(BATCH, 3, size, size, device="npu")
    y = torch.randint(0, CLASSES, (BATCH,), device="npu")
    forward_backward(model, x, y)
    opt = sgd(model.parameters())
    opt.step()

    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    buf.seek(0)
    on_npu = torch.load(buf, map_location="npu")

    for name, t in model.state_dict().items():
        assert on_cpu["model"][name].device.type == "cpu"
        assert on_npu["model"][name].device.type == "npu"
        assert torch.equal(on_cpu["model"][name], t.cpu()), name
        assert torch.equal(on_npu["model"][name].cpu(), t.cpu()), name
    for i, state in opt.state_dict()["state"].items():
        assert torch.equal(on_cpu["opt"]["state"][i]["momentum_buffer"],
                           state["momentum_buffer"].cpu())

    # the CPU copy goes back on npu and gives the same outputs
    again, _ = make()
    again.load_state_dict(on_cpu["model"])
    again = again.npu().eval()
    model.eval()
    with torch.no_grad():
        assert torch.equal(again(x).cpu(), model(x).cpu())
