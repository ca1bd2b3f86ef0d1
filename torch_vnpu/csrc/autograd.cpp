// SPDX-License-Identifier: MIT
// Autograd for the npu: aten ops get PyTorch's own formulas (registered
// on the Autograd alias key, which covers AutogradPrivateUse1); the
// npu:: ops get what torch_npu gives them. PyTorch 1.13 registers a
// fallthrough on every Autograd<Backend> key but AutogradPrivateUse1, so
// an op without an autograd kernel would fail there; the fallthrough
// makes such ops (npu::get_npu_format) run untracked, as on the CPU.
#include "backend.h"

#include <ATen/ops/convolution_backward.h>
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

// PyTorch's convolution backward reaches a backend it does not know as
// convolution_backward_overrideable. It runs on PyTorch's CPU kernel
// through the fallback's policy and report (the device has no backward
// convolution kernels yet).
std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolution_backward(const at::Tensor &grad_output, const at::Tensor &input,
		     const at::Tensor &weight, c10::IntArrayRef stride,
		     c10::IntArrayRef padding, c10::IntArrayRef dilation,
		     bool transposed, c10::IntArrayRef output_padding,
		     int64_t groups, std::array<bool, 3> output_mask)
{
	static const char name[] = "aten::convolution_backward";

	if (!vnpu_fallback_enter(name))
		throw_dispatch_error(name);
	vnpu_fallback_done(name, true);
	int64_t bias = weight.size(transposed ? 1 : 0) * (transposed ? groups : 1);
	auto r = at::convolution_backward(
		grad_output.cpu(), input.cpu(), weight.cpu(),
		output_mask[2] ? c10::make_optional(c10::IntArrayRef(&bias, 1)) :
				 c10::nullopt,
		stride, padding, dilation, transposed, output_padding, groups,
		output_mask);
	auto back = [&](const at::Tensor &t) {
		return t.defined() ? t.to(input.device()) : t;
	};
	return { back(std::get<0>(r)), back(std::get<1>(r)), back(std::get<2>(r)) };
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m)
{
	m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(npu, AutogradPrivateUse1, m)
{
	m.impl("npu_format_cast", TORCH_FN(format_cast_autograd));
}

} // namespace torch_vnpu
