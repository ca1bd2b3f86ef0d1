// SPDX-License-Identifier: MIT
// The CPU fallback for PrivateUse1: an op without an NPU kernel (or one
// an NPU kernel leaves to the CPU) runs on PyTorch's own CPU kernel. npu
// tensors (alone, in lists, optional) are copied to the CPU, the op is
// redispatched to the CPU key, written arguments are copied back into the
// npu tensors they came from (resized when the op resized them), and the
// other results move to the op's npu device. The policy and the counters
// are the dispatcher's (VNPU_FALLBACK, vnpu_fallback_report).
#include "backend.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <unordered_map>

namespace torch_vnpu {

static std::string qualified_name(const c10::OperatorHandle &op)
{
	const c10::OperatorName &n = op.operator_name();

	return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

static bool is_npu(const at::Tensor &t)
{
	return t.defined() && t.device().type() == kNpu;
}

// One npu tensor passed twice (an input that is also the out=) has one
// CPU copy, so that the CPU kernel sees that they are the same.
using CpuCopies = std::unordered_map<c10::TensorImpl *, at::Tensor>;

static at::Tensor cpu_copy(const at::Tensor &t, CpuCopies &seen)
{
	auto it = seen.find(t.unsafeGetTensorImpl());

	if (it != seen.end())
		return it->second;
	at::Tensor c = t.cpu();

	seen.emplace(t.unsafeGetTensorImpl(), c);
	return c;
}

// The CPU copy of one argument value (tensors, lists, optional lists).
static c10::IValue to_cpu(const c10::IValue &v, c10::optional<at::Device> &tgt,
			  CpuCopies &seen)
{
	if (v.isTensor()) {
		const at::Tensor &t = v.toTensor();

		if (!is_npu(t))
			return v;
		if (!tgt)
			tgt = t.device();
		return cpu_copy(t, seen);
	}
	if (v.isTensorList()) {
		c10::List<at::Tensor> out;

		for (const at::Tensor &t : v.toTensorVector()) {
			if (is_npu(t) && !tgt)
				tgt = t.device();
			out.push_back(is_npu(t) ? cpu_copy(t, seen) : t);
		}
		return out;
	}
	if (v.isOptionalTensorList()) {
		c10::List<c10::optional<at::Tensor>> out;

		for (const c10::optional<at::Tensor> &t : v.toOptionalTensorList()) {
			if (t && is_npu(*t)) {
				if (!tgt)
					tgt = t->device();
				out.push_back(cpu_copy(*t, seen));
			} else {
				out.push_back(t);
			}
		}
		return out;
	}
	if (v.isDevice() && v.toDevice().type() == kNpu) {
		if (!tgt)
			tgt = v.toDevice();
		return at::Device(at::kCPU);
	}
	return v;
}

static c10::IValue to_device(const c10::IValue &v, const at::Device &d)
{
	if (v.isTensor()) {
		const at::Tensor &t = v.toTensor();

		return t.defined() && t.device() != d ? t.to(d) : t;
	}
	if (v.isTensorList()) {
		c10::List<at::Tensor> out;

		for (const at::Tensor &t : v.toTensorVector())
			out.push_back(t.defined() ? t.to(d) : t);
		return out;
	}
	return v;
}

// Copies the CPU result of a written argument back into the npu tensor.
static void copy_back(const at::Tensor &npu, const at::Tensor &cpu)
{
	if (npu.sizes() != cpu.sizes())
		npu.resize_(cpu.sizes());
	npu.copy_(cpu);
}

namespace {

// The fallback allocates and copies on the npu, which must never fall
// back in turn; a bound on the nesting turns a cycle into an error
// instead of a stack overflow.
thread_local int fallback_depth;

struct DepthGuard {
	DepthGuard(const std::string &name)
	{
		TORCH_CHECK(fallback_depth < 8, "torch_vnpu: the CPU fallback of ",
			    name, " nests too deeply (a fallback cycle)");
		fallback_depth++;
	}
	~DepthGuard() { fallback_depth--; }
};

} // namespace

void cpu_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	std::string name = qualified_name(op);

	if (!vnpu_fallback_enter(name.c_str()))
		throw_dispatch_error(name.c_str());
	try {
		run_on_cpu(op, stack);
	} catch (...) {
		vnpu_fallback_done(name.c_str(), false);
		throw;
	}
	vnpu_fallback_done(name.c_str(), true);
}

void run_on_cpu(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	const c10::FunctionSchema &schema = op.schema();
	const auto &args = schema.arguments();
	size_t n = args.size(), base = stack->size() - n;
	std::string name = qualified_name(op);
	DepthGuard depth(name);
	std::vector<c10::IValue> orig(stack->begin() + base, stack->end());
	c10::optional<at::Device> tgt;
	std::vector<c10::IValue> cpu_args;
	// a written tensor whose elements share memory: PyTorch's kernels
	// refuse it, and its dense CPU copy would hide that
	for (size_t i = 0; i < n; i++) {
		const c10::AliasInfo *ai = args[i].alias_info();

		if (ai && ai->isWrite() && orig[i].isTensor() &&
		    orig[i].toTensor().defined())
			at::assert_no_internal_overlap(orig[i].toTensor());
	}
	CpuCopies seen;
	for (size_t i = 0; i < n; i++) {
		cpu_args.push_back(to_cpu(orig[i], tgt, seen));
		(*stack)[base + i] = cpu_args.back();
	}

	op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

	const auto &rets = schema.returns();
	size_t nr = rets.size();
	TORCH_CHECK(stack->size() == base + nr, "torch_vnpu: CPU fallback of ",
		    name, ": the CPU kernel left ", stack->size() - base,
		    " values, expected ", nr);
	// written arguments: the CPU copies were written, the npu tensors
	// they came from must be
	for (size_t i = 0; i < n; i++) {
		const c10::AliasInfo *ai = args[i].alias_info();

		if (!ai || !ai->isWrite())
			continue;
		if (orig[i].isTensor() && is_npu(orig[i].toTensor())) {
			copy_back(orig[i].toTensor(), cpu_args[i].toTensor());
		} else if (orig[i].isTensorList()) {
			auto o = orig[i].toTensorVector();
			auto c = cpu_args[i].toTensorVector();

			for (size_t j = 0; j < o.size(); j++)
				if (is_npu(o[j]))
					copy_back(o[j], c[j]);
		}
	}
	for (size_t r = 0; r < nr; r++) {
		c10::IValue &rv = (*stack)[base + r];
		const c10::AliasInfo *ra = rets[r].alias_info();

		if (ra && ra->isWrite()) {
			// the argument of the same alias set is the result
			for (size_t i = 0; i < n; i++) {
				const c10::AliasInfo *ai = args[i].alias_info();

				if (ai && ai->isWrite() &&
				    ai->beforeSets() == ra->beforeSets())
					rv = orig[i];
			}
			continue;
		}
		if (ra && !ra->isWrite()) {
			TORCH_WARN_ONCE("torch_vnpu: ", name,
					" is a view op without an npu kernel; its result on npu is a copy, not a view");
		}
		if (tgt && tgt->type() == kNpu)
			rv = to_device(rv, *tgt);
	}
}

} // namespace torch_vnpu
