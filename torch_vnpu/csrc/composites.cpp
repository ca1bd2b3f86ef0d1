// SPDX-License-Identifier: MIT
// PyTorch composite kernels that are wrong for some npu inputs, run on
// the input they are right for: the work is still PyTorch's composite
// over torch_vnpu's kernels. (Those whose composite refuses npu tensors
// outright take the CPU fallback: CPU_FALLBACK_OPS in the generator.)
#include "backend.h"

#include <ATen/ops/native_group_norm_native.h>
#include <torch/library.h>

namespace torch_vnpu {

// math_group_norm views its input as (N, group, -1), which a
// channels_last input is not: it runs on the contiguous input, and the
// result takes the input's memory format, as PyTorch's own kernels give.
static std::tuple<at::Tensor, at::Tensor, at::Tensor>
group_norm(const at::Tensor &input, const std::optional<at::Tensor> &weight,
	   const std::optional<at::Tensor> &bias, c10::SymInt N, c10::SymInt C,
	   c10::SymInt HxW, int64_t group, double eps)
{
	auto r = at::native::math_group_norm(input.contiguous(), weight, bias,
					     N.expect_int(), C.expect_int(),
					     HxW.expect_int(), group, eps);

	std::get<0>(r) = std::get<0>(r).contiguous(input.suggest_memory_format());
	return r;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("native_group_norm", TORCH_FN(group_norm));
}

} // namespace torch_vnpu
