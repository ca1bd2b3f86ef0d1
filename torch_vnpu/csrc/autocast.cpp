// SPDX-License-Identifier: MIT
// torch.autocast('npu', dtype=torch.float16 | torch.bfloat16): PyTorch's
// own cast policy, the op lists it shares with every backend (ATen's
// autocast_mode.h), registered for AutocastPrivateUse1 as PyTorch
// registers them for AutocastCUDA. Ops outside the lists pass through.
#include "backend.h"

#include <ATen/autocast_mode.h>
#include <torch/library.h>

// The op lists name ATen's types unqualified, as inside at::autocast,
// where PyTorch expands them: so are they here (in a namespace of our own
// within it).
namespace at::autocast {
namespace vnpu {
namespace {

// binary_cross_entropy is unsafe to autocast (PyTorch refuses it under
// CUDA's autocast with the same advice).
at::Tensor binary_cross_entropy_refused(const at::Tensor &,
					const at::Tensor &,
					const std::optional<at::Tensor> &,
					int64_t)
{
	TORCH_CHECK(false,
		    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
		    "are unsafe to autocast on npu, as on cuda: use "
		    "binary_cross_entropy_with_logits / BCEWithLogitsLoss, which "
		    "are safe to autocast");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m)
{
	m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m)
{
#define NPU_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
	AT_FORALL_LOWER_PRECISION_FP(NPU_LOWER_PRECISION_FP)
#define NPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
	AT_FORALL_FP32(NPU_FP32)
#define NPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
	AT_FORALL_FP32_SET_OPT_DTYPE(NPU_FP32_SET_OPT_DTYPE)
	AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(
		KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define NPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
	AT_FORALL_PROMOTE(NPU_PROMOTE)
	m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_refused));
}

} // namespace
} // namespace vnpu
} // namespace at::autocast
