# SPDX-License-Identifier: MIT
"""Where vnpu deliberately differs from PyTorch's CPU on PyTorch's own
samples, with the reason (as OpInfo's skips and decorators carry theirs).

Key: (front, op, dtype, what)
  front  'c-cpu', 'c-npu' (the C dispatcher on a device), 'c' (both),
         'torch' (torch_vnpu on npu), '*'
  op     the aten overload ('aten::add.Tensor') for the C front end, the
         OpInfo's name for torch_vnpu ('nn.functional.gelu', 'add_' for
         its in-place variant, ' (errors)' appended for error_inputs)
  dtype  'float16' ... or '*'
  what   'value' (results differ), 'raises' (vnpu refuses what PyTorch
         computes), 'grad', 'accepts' (vnpu computes what PyTorch
         refuses), 'error' (a different error than error_inputs expects)
A listed difference that stops occurring fails the harness: the list only
shrinks. docs/dispatcher.md explains each class of them. An entry that
only some PyTorch versions' samples reach names those versions in
SAMPLED_BY; on the others it is not held stale.
"""

_CE16 = ("PyTorch 2.6's CPU log_softmax rounds x - max(x) to float16 before "
         'the exponentials and the log; vnpu computes the row in float32 and '
         'rounds once, so one loss of one sample is 1 ulp apart')

_ATAN2_26 = (
    "PyTorch 2.6's atan2 gradient is grad * other / (self ** 2 + other ** 2) "
    'in the input dtype: NaN at the origin, and where the squares underflow '
    'in float16/bfloat16; PyTorch 2.13 gives 0 at the origin, as the C '
    'autograd does (which computes in float32). Reference samples with '
    'zeros and tiny values, 13 of 943,593 to 24 of 256 elements')
_INT32_INDEX_26 = (
    "PyTorch 2.6's gather and scatter refuse an int32 index ('Expected "
    "dtype int64 for index'); 2.13 takes int32 and int64, as the C "
    'dispatcher does (torch_vnpu leaves an int32 index to the CPU kernel '
    'of the PyTorch that runs)')
_HARDTANH_NAN = (
    "at a NaN self, hardtanh's gradient is PyTorch's formula (zero where "
    'self <= min or self >= max) with no comparison true: the gradient '
    "passes, as CUDA's kernel and the CPU's scalar loop give; the CPU's "
    'vectorized loop computes (self > min) & (self < max) and zeroes it. '
    "PyTorch's own CPU differs between two [128, 128] reference samples, "
    'contiguous (zeroed) and not (passed): the third of the elements that '
    'are NaN in the first')
_TIED_GRADIENT = (
    'where a line holds equal values (float16/bfloat16 samples of 8,000 '
    'elements round into many), each value\'s gradient goes to the '
    'position the sort took it from: vnpu sorts stably, PyTorch\'s CPU in '
    'an order of its own (stable=False leaves it unspecified), so the same '
    'gradients land on other positions among equal inputs; the values and '
    'the selected inputs agree (harness.py, TIES_UNSPECIFIED)')

ACCEPTED = {
    ('c', 'aten::gather (errors)', 'float32', 'accepts'): _INT32_INDEX_26,
    ('c', 'aten::scatter.src (errors)', 'float32', 'accepts'): _INT32_INDEX_26,
    ('c', 'aten::scatter_add (errors)', 'float32', 'accepts'): _INT32_INDEX_26,
    ('c', 'aten::sort', 'float16', 'grad'): _TIED_GRADIENT,
    ('c', 'aten::sort', 'bfloat16', 'grad'): _TIED_GRADIENT,
    ('c', 'aten::topk', 'bfloat16', 'grad'): _TIED_GRADIENT,
    ('c', 'aten::topk', 'float16', 'grad'): _TIED_GRADIENT,
    ('c', 'aten::hardtanh', 'float16', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::relu6', 'float16', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::hardtanh_backward', 'float16', 'value'): _HARDTANH_NAN,
    ('c', 'aten::hardtanh', 'bfloat16', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::relu6', 'bfloat16', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::hardtanh_backward', 'bfloat16', 'value'): _HARDTANH_NAN,
    ('c', 'aten::hardtanh', 'float32', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::relu6', 'float32', 'grad'): _HARDTANH_NAN,
    ('c', 'aten::hardtanh_backward', 'float32', 'value'): _HARDTANH_NAN,
    ('c-npu', 'aten::sigmoid', 'float16', 'grad'):
        "the npu's sigmoid_backward computes float16 in float32 and rounds "
        'once, as CUDA\'s opmath does (tests/torch/test_autograd.py holds it '
        "to that); PyTorch's CPU rounds each of its three ops to float16, "
        'so about 1 in 3,000 gradient elements differ by 1 ulp',
    ('c', 'aten::addcdiv', 'bfloat16', 'grad'):
        "the C front end's addcdiv is composite (a division, then an add "
        'with alpha): its autograd sums the gradient over a broadcast '
        "dim before dividing by tensor2; PyTorch's fused formula divides "
        'each element first. Where tensor2 is 0 and the gradient has both '
        "signs, that is inf against PyTorch's NaN (inf - inf); finite "
        'elements agree',
    ('c', 'aten::linalg_vector_norm', 'float16', 'grad'):
        "for a fractional order (0.9, -2.1) the gradient's |x|^(p-1) is "
        "PyTorch's pow, which computes float16 with a float32 exponent "
        "(p - 1 = -0.1 rounded to float32); the C dispatcher's pow takes "
        'the exponent as a double. Each step is rounded to float16 in both, '
        'so 1 element in 12 to 15 of 4 samples is 1-2 ulp apart',
    ('c', 'aten::cross_entropy_loss', 'float16', 'value'): _CE16,
    ('torch', 'nn.functional.cross_entropy', 'float16', 'value'): _CE16,
    ('c', 'aten::clamp.Tensor', 'bfloat16', 'grad'):
        "where min == max and self is below them, PyTorch's clamp_backward "
        'gives no argument a gradient (self < min, but min < max is false); '
        "the C front end's clamp.Tensor is a decomposition (max with min, "
        'then min with max) whose gradient goes to min, the value taken. '
        'A bfloat16 sample of PyTorch 2.6 rounds one min and max to the '
        'same value: 1 element of 250',
    ('c', 'aten::atan2', 'float16', 'grad'): _ATAN2_26,
    ('c', 'aten::atan2', 'bfloat16', 'grad'): _ATAN2_26,
    ('c', 'aten::atan2', 'float32', 'grad'): _ATAN2_26,
    ('c', 'aten::tan', 'float16', 'grad'):
        "PyTorch 2.6's tan gradient, grad * (1 + result ** 2), rounds each "
        'step to float16 (and overflows to inf a step early); the C '
        'autograd computes it in float32 and rounds once, as PyTorch 2.13 '
        'does: 0.1 % of the elements of 4 reference samples, up to 1.3e-3 '
        'relative apart',
    ('c', 'aten::pow.Tensor_Tensor', 'float32', 'grad'):
        'the exponent of a [10, 1, 5] ** [1, 10, 5] sample gets the sum of '
        '10 float32 terms of up to 1.2e4 whose signs cancel to about 166; '
        'the C dispatcher accumulates that sum in double, PyTorch in '
        'float32, so 1 of 50 elements is 3.4e-6 apart (5.6e-4 absolute, '
        'below an ulp of the terms)',
}

# entry -> the PyTorch versions (major.minor) whose OpInfo samples reach it
SAMPLED_BY = {
    ('c', 'aten::gather (errors)', 'float32', 'accepts'): ('2.6',),
    ('c', 'aten::scatter.src (errors)', 'float32', 'accepts'): ('2.6',),
    ('c', 'aten::scatter_add (errors)', 'float32', 'accepts'): ('2.6',),
    ('c', 'aten::sort', 'float16', 'grad'): ('2.13',),
    ('c', 'aten::sort', 'bfloat16', 'grad'): ('2.13',),
    ('c', 'aten::topk', 'bfloat16', 'grad'): ('2.13',),
    ('c', 'aten::topk', 'float16', 'grad'): ('2.6',),
    ('c', 'aten::hardtanh', 'float16', 'grad'): ('2.13',),
    ('c', 'aten::relu6', 'float16', 'grad'): ('2.13',),
    ('c', 'aten::hardtanh_backward', 'float16', 'value'): ('2.13',),
    ('c', 'aten::hardtanh', 'bfloat16', 'grad'): ('2.13',),
    ('c', 'aten::relu6', 'bfloat16', 'grad'): ('2.13',),
    ('c', 'aten::hardtanh_backward', 'bfloat16', 'value'): ('2.13',),
    ('c', 'aten::hardtanh', 'float32', 'grad'): ('2.13',),
    ('c', 'aten::relu6', 'float32', 'grad'): ('2.13',),
    ('c', 'aten::hardtanh_backward', 'float32', 'value'): ('2.13',),
    ('c', 'aten::linalg_vector_norm', 'float16', 'grad'): ('2.13',),
    ('c', 'aten::addcdiv', 'bfloat16', 'grad'): ('2.6',),
    ('c', 'aten::cross_entropy_loss', 'float16', 'value'): ('2.6',),
    ('torch', 'nn.functional.cross_entropy', 'float16', 'value'): ('2.6',),
    ('c', 'aten::clamp.Tensor', 'bfloat16', 'grad'): ('2.6',),
    ('c', 'aten::pow.Tensor_Tensor', 'float32', 'grad'): ('2.13',),
    ('c', 'aten::atan2', 'float16', 'grad'): ('2.6',),
    ('c', 'aten::atan2', 'bfloat16', 'grad'): ('2.6',),
    ('c', 'aten::atan2', 'float32', 'grad'): ('2.6',),
    ('c', 'aten::tan', 'float16', 'grad'): ('2.6',),
}

# Results vnpu gives in float32 where PyTorch's CPU gives the input's
# float16/bfloat16: compared after rounding to PyTorch's dtype (so their
# values are still judged) and counted as listed. Keyed by aten overload
# (C front end) and OpInfo name (torch_vnpu).
_STATS = ('the statistics (mean and inverse standard deviation) stay float32 '
          'for float16/bfloat16 input, as CUDA returns them (accumulate type); '
          'the backward uses them unrounded')
F32_RESULTS = {
    'aten::native_layer_norm': _STATS,
    'aten::native_batch_norm': _STATS,
    'native_layer_norm': _STATS,
    'native_batch_norm': _STATS,
}
