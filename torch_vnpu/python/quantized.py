# SPDX-License-Identifier: MIT
"""int8 inference on the device's int8 engine (the qgemm kernel).

Quantisation is per tensor and affine, as PyTorch's quint8/qint8 tensors:
real = scale * (q - zero_point). The device holds the integer
representations (uint8 activations, int8 weights): take them from a
quantized CPU tensor with .int_repr(), its scale and zero point with
.q_scale() and .q_zero_point().
"""
import torch

from . import _C  # noqa: F401  (registers the npu ops)


def npu_int8_matmul(a, b, a_zero_point=0, b_zero_point=0):
    """(a - a_zero_point) @ (b - b_zero_point) in exact int32: a uint8
    [M, K], b int8 [K, N], K <= 32768."""
    return torch.ops.npu.npu_int8_matmul(a, b, a_zero_point, b_zero_point)


def npu_quantized_linear(input, input_scale, input_zero_point, weight,
                         weight_scale, weight_zero_point, bias,
                         output_scale, output_zero_point):
    """A quantized linear layer as torch.ops.quantized.linear: input uint8
    [..., K], weight int8 [N, K], bias float32 [N] or None; returns the
    uint8 output [..., N] quantized with output_scale and
    output_zero_point (round half to even, saturated)."""
    return torch.ops.npu.npu_quantized_linear(
        input, input_scale, input_zero_point, weight, weight_scale,
        weight_zero_point, bias, output_scale, output_zero_point)
