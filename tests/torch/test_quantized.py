# SPDX-License-Identifier: MIT
"""int8 inference on the device: torch.ops.npu.npu_int8_matmul against an
int64 matmul, and torch.ops.npu.npu_quantized_linear against PyTorch's own
quantized linear layer (quantized::linear, FBGEMM), on the device and
through our CPU kernels; bad arguments get a RuntimeError naming the op."""
import pytest
import torch

from conftest import NPU

DEVICES = ['cpu', NPU]


def rand_u8(*shape):
    return torch.randint(0, 256, shape, dtype=torch.uint8)


def rand_s8(*shape):
    return torch.randint(-128, 128, shape, dtype=torch.int8)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('m,k,n', [(1, 1, 1), (5, 37, 6), (33, 130, 17),
                                   (70, 300, 45), (3, 0, 4), (0, 5, 2)])
def test_int8_matmul_is_exact(device, m, k, n):
    torch.manual_seed(m * 1000 + k + n)
    a, b = rand_u8(m, k), rand_s8(k, n)
    for za, zb in ((0, 0), (128, 0), (3, -2), (255, -128), (0, 127)):
        want = ((a.long() - za) @ (b.long() - zb)).int()
        got = torch.ops.npu.npu_int8_matmul(a.to(device), b.to(device), za, zb)
        assert got.dtype == torch.int32 and got.device.type == torch.device(device).type
        assert torch.equal(got.cpu(), want), (za, zb)


@pytest.mark.parametrize('device', DEVICES)
def test_int8_matmul_strided_operands(device):
    torch.manual_seed(1)
    a, b = rand_u8(24, 40), rand_s8(30, 24)
    # a transposed view and a transposed column slice: any strides
    at, bt = a.to(device).t(), b.to(device).t()[:, 3:20]
    want = (a.long().t() @ b.long().t()[:, 3:20]).int()
    assert torch.equal(torch.ops.npu.npu_int8_matmul(at, bt).cpu(), want)


def pytorch_quantized_linear(x, xs, xz, w, ws, wz, bias, os_, oz):
    qx = torch.quantize_per_tensor(x, xs, xz, torch.quint8)
    qw = torch.quantize_per_tensor(w, ws, wz, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(qw, bias)
    return qx, qw, torch.ops.quantized.linear(qx, packed, os_, oz)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('shape,n', [((4, 64), 16), ((2, 3, 100), 33),
                                     ((1, 7), 5), ((300, 256), 128)])
@pytest.mark.parametrize('with_bias', [True, False])
def test_quantized_linear_matches_pytorch(device, shape, n, with_bias):
    torch.manual_seed(len(shape) * 100 + n)
    k = shape[-1]
    x, w = torch.randn(*shape), torch.randn(n, k)
    bias = torch.randn(n) if with_bias else None
    for xs, xz, ws, os_, oz in ((0.05, 128, 0.02, 0.3, 100),
                                (0.1, 0, 0.01, 0.05, 0),
                                (0.02, 255, 0.05, 1.0, 255)):
        qx, qw, qy = pytorch_quantized_linear(x, xs, xz, w, ws, 0, bias, os_, oz)
        y = torch.ops.npu.npu_quantized_linear(
            qx.int_repr().to(device), xs, xz, qw.int_repr().to(device), ws, 0,
            None if bias is None else bias.to(device), os_, oz)
        assert y.dtype == torch.uint8 and y.shape == qy.shape
        diff = (y.cpu().int() - qy.int_repr().int()).abs()
        # FBGEMM requantises with its own float steps (without a bias one
        # multiply by float32 xs * ws / os, 0.020000001 for 0.1 * 0.01 /
        # 0.05): a value within float rounding of a rounding tie may
        # round the other way, never by more than one step, and nowhere
        # else. The exact value, in float64:
        acc = (qx.int_repr().long() - xz) @ qw.int_repr().long().t()
        exact = acc.double() * (xs * ws / os_) + oz
        if bias is not None:
            exact += bias.double() / os_
        frac = exact - exact.floor()
        near_tie = (frac - 0.5).abs() <= 1e-5 * (exact.abs() + 1)
        assert diff.max().item() <= 1
        assert bool(near_tie[diff > 0].all()), exact[(diff > 0) & ~near_tie]


def test_device_and_cpu_kernels_agree_bit_for_bit():
    torch.manual_seed(5)
    x, w, b = rand_u8(9, 77), rand_s8(13, 77), torch.randn(13)
    args = (0.03, 17, 0.004, None, 0.2, 31)
    cpu = torch.ops.npu.npu_quantized_linear(x, args[0], args[1], w, args[2],
                                             -3, b, args[4], args[5])
    dev = torch.ops.npu.npu_quantized_linear(x.to(NPU), args[0], args[1], w.to(NPU),
                                             args[2], -3, b.to(NPU), args[4], args[5])
    assert torch.equal(cpu, dev.cpu())


@pytest.mark.parametrize('device', DEVICES)
def test_bad_arguments_are_refused(device):
    a, b = rand_u8(4, 8).to(device), rand_s8(8, 3).to(device)
    mm = torch.ops.npu.npu_int8_matmul
    ql = torch.ops.npu.npu_quantized_linear
    w = rand_s8(3, 8).to(device)
    cases = [
        (lambda: mm(a.float(), b), 'expected uint8 self and int8 mat2'),
        (lambda: mm(a, b.to(torch.uint8)), 'expected uint8 self and int8 mat2'),
        (lambda: mm(a, b[:5]), 'shapes cannot be multiplied'),
        (lambda: mm(a[0], b), 'expected a 2-D self'),
        (lambda: mm(a, b, 256, 0), 'zero points must be in'),
        (lambda: mm(a, b, 0, -129), 'zero points must be in'),
        (lambda: ql(a, 0.1, 0, w, 0.0, 0, None, 0.1, 0), 'scales must be finite and positive'),
        (lambda: ql(a, float('nan'), 0, w, 0.1, 0, None, 0.1, 0), 'scales must be finite'),
        (lambda: ql(a, 0.1, 0, w, 0.1, 0, None, float('inf'), 0), 'scales must be finite'),
        (lambda: ql(a, 1e-30, 0, w, 1e-30, 0, None, 0.1, 0), 'scales must be finite'),
        (lambda: ql(a, 0.1, 0, w, 0.1, 0, None, 0.1, 256), 'output_zero_point must be in'),
        (lambda: ql(a, 0.1, 0, w, 0.1, 0, torch.ones(4, device=device), 0.1, 0),
         r'bias must be float32 \[3\]'),
        (lambda: ql(a, 0.1, 0, w, 0.1, 0, torch.ones(3, device=device).half(), 0.1, 0),
         'bias must be float32'),
    ]
    for f, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f()
    big_k = 32769
    with pytest.raises(RuntimeError, match='larger than 32768'):
        mm(rand_u8(1, big_k).to(device), rand_s8(big_k, 1).to(device))


def test_tensors_of_two_devices_are_refused():
    with pytest.raises(RuntimeError):
        torch.ops.npu.npu_int8_matmul(rand_u8(2, 3).to(NPU), rand_s8(3, 2))
