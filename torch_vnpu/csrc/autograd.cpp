// SPDX-License-Identifier: MIT
// Autograd for the npu: aten ops get PyTorch's own formulas (registered
// on the Autograd alias key, which covers AutogradPrivateUse1); the
// npu:: ops get what torch_npu gives them. PyTorch 1.13 registers a
// fallthrough on every Autograd<Backend> key but AutogradPrivateUse1, so
// an op without an autograd kernel would fail there; the fallthrough
// makes such ops (npu::get_npu_format) run untracked, as on the CPU.
#include "backend.h"

#include <torch/autograd.h>
#include <torch/library.h>

namespace torch_vnpu {

namespace {

// A format cast changes the bytes' layout, not the values: the gradient
// passes through (in the plain layout autograd works in).
struct FormatCast : public torch::autograd::Function<FormatCast> {
	static at::Tensor forward(torch::autograd::AutogradContext *ctx,
				  const at::Tensor &self, int64_t fmt)
	{
		at::AutoDispatchBelowADInplaceOrView guard;
		static auto op = c10::Dispatcher::singleton()
			.findSchemaOrThrow("npu::npu_format_cast", "")
			.typed<at::Tensor(const at::Tensor &, int64_t)>();

		return op.call(self, fmt);
	}
	static torch::autograd::variable_list
	backward(torch::autograd::AutogradContext *ctx,
		 torch::autograd::variable_list grads)
	{
		return { grads[0], at::Tensor() };
	}
};

at::Tensor format_cast_autograd(const at::Tensor &self, int64_t fmt)
{
	return FormatCast::apply(self, fmt);
}

} // namespace

TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m)
{
	m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(npu, AutogradPrivateUse1, m)
{
	m.impl("npu_format_cast", TORCH_FN(format_cast_autograd));
}

} // namespace torch_vnpu
