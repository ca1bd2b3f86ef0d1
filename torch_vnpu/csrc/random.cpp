// SPDX-License-Identifier: MIT
// Random numbers on the npu come from PyTorch's CPU generator: the op runs
// on the host and its result is copied to the device. So
// torch.manual_seed makes npu draws reproducible, and they equal the CPU's
// draws for the same seed (docs/torch.md). This is the design, not a
// fallback: these ops are neither refused by VNPU_FALLBACK=error nor
// counted in the report.
#include "backend.h"

#include <torch/library.h>

namespace torch_vnpu {

static void host_random(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	run_on_cpu(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	for (const char *name : { "normal_", "uniform_", "random_", "random_.from",
				  "random_.to", "bernoulli_.float", "bernoulli_.Tensor",
				  "exponential_", "log_normal_", "cauchy_", "geometric_",
				  "randperm.generator_out", "multinomial",
				  "normal.Tensor_float", "normal.float_Tensor",
				  "normal.Tensor_Tensor", "native_dropout" })
		m.impl(name, torch::CppFunction::makeFromBoxedFunction<&host_random>());
}

} // namespace torch_vnpu
