// SPDX-License-Identifier: MIT
// The CPU fallback for PrivateUse1: an op without an NPU kernel (or one
// an NPU kernel leaves to the CPU) runs on PyTorch's own CPU kernel. The
// npu storages of its tensors (alone, in lists, optional) are copied to
// the CPU and the tensors rebuilt over them with their geometry, the op is
// redispatched to the CPU key, written storages are copied back (a
// written tensor the op resized, as a tensor), and the other results move
// to the op's npu device. The policy and the counters
// are the dispatcher's (VNPU_FALLBACK, vnpu_fallback_report).
#include "backend.h"

extern "C" {
#include "vnpu/kernel_abi.h"
}

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/ivalue.h>
#include <torch/library.h>

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

// The host side of a call: every npu storage its arguments reach is
// copied to the CPU once (the byte range its tensors use), and every npu
// tensor becomes a CPU tensor of the same geometry over that copy. So the
// CPU kernel sees the aliasing the npu tensors have (an input that is
// also the out=, views of one tensor, an expanded tensor) and PyTorch's
// own overlap checks, warnings and semantics hold unchanged; a written
// storage is copied back as a whole range.
struct HostStorage {
	c10::Storage npu;
	int64_t lo = INT64_MAX, hi = 0; // bytes of npu the tensors use
	at::Tensor bytes;               // their CPU copy, uint8 [hi - lo]
	bool written = false;
};

class HostSide {
public:
	// First pass: the range each storage's tensors use.
	void reach(const at::Tensor &t)
	{
		if (!is_npu(t) || !t.numel() || !plain(t))
			return;
		int64_t isz = (int64_t)t.itemsize(), last = t.storage_offset();

		for (int64_t d = 0; d < t.dim(); d++)
			last += (t.size(d) - 1) * t.stride(d);
		HostStorage &h = storages_[t.storage().unsafeGetStorageImpl()];
		h.npu = t.storage();
		// aligned for any element size, so every tensor's offset into
		// the copy is a whole number of its elements
		h.lo = std::min(h.lo, t.storage_offset() * isz / 16 * 16);
		h.hi = std::max(h.hi, (last + 1) * isz);
	}

	void copy_in()
	{
		for (auto &kv : storages_) {
			HostStorage &h = kv.second;

			h.bytes = at::empty({ h.hi - h.lo }, at::kByte);
			copy_storage_bytes(h.npu, h.lo, h.hi - h.lo,
					   h.bytes.data_ptr(), true);
		}
	}

	at::Tensor cpu(const at::Tensor &t)
	{
		auto it = tensors_.find(t.unsafeGetTensorImpl());

		if (it != tensors_.end())
			return it->second;
		at::TensorOptions o = t.options().device(at::kCPU);
		at::Tensor c;

		if (!t.numel()) {
			c = at::empty_strided(t.sizes(), t.strides(), o);
		} else if (!plain(t)) {
			c = t.cpu(); // an internal format: its values, not bytes
		} else {
			const HostStorage &h =
				storages_.at(t.storage().unsafeGetStorageImpl());
			int64_t isz = (int64_t)t.itemsize();

			c = at::empty({ 0 }, o).set_(
				h.bytes.storage(),
				(t.storage_offset() * isz - h.lo) / isz,
				t.sizes(), t.strides());
			// the lazy negation/conjugation bits read the same bytes
			if (t.is_conj())
				c = c.conj();
			if (t.is_neg())
				c = at::_neg_view(c);
		}
		tensors_.emplace(t.unsafeGetTensorImpl(), c);
		return c;
	}

	// A written npu tensor after the CPU kernel: its storage's range is
	// copied back, unless the kernel gave its CPU tensor another
	// geometry (resized an out=), which is then copied as a tensor.
	void written(const at::Tensor &npu, const at::Tensor &cpu)
	{
		if (npu.numel() && plain(npu) && cpu.sizes() == npu.sizes() &&
		    cpu.strides() == npu.strides() &&
		    cpu.storage().is_alias_of(storages_.at(
			    npu.storage().unsafeGetStorageImpl()).bytes.storage())) {
			storages_[npu.storage().unsafeGetStorageImpl()].written = true;
			return;
		}
		resized_.emplace_back(npu, cpu);
	}

	void copy_out()
	{
		for (auto &kv : storages_) {
			HostStorage &h = kv.second;

			if (h.written)
				copy_storage_bytes(h.npu, h.lo, h.hi - h.lo,
						   h.bytes.data_ptr(), false);
		}
		for (auto &r : resized_) {
			if (r.first.sizes() != r.second.sizes())
				r.first.resize_(r.second.sizes());
			r.first.copy_(r.second);
		}
	}

private:
	// whether the storage's bytes are the tensor's elements (ND format)
	static bool plain(const at::Tensor &t)
	{
		struct vnpu_at_storage *st = storage_of(t.storage());

		return st && st->npu.npu_format == VNPU_FORMAT_ND;
	}

	std::unordered_map<c10::StorageImpl *, HostStorage> storages_;
	std::unordered_map<c10::TensorImpl *, at::Tensor> tensors_;
	std::vector<std::pair<at::Tensor, at::Tensor>> resized_;
};

// Every npu tensor of one argument value (tensors, lists, optional lists).
template <typename F> static void each_npu_tensor(const c10::IValue &v, F f)
{
	if (v.isTensor()) {
		if (is_npu(v.toTensor()))
			f(v.toTensor());
	} else if (v.isTensorList()) {
		for (const at::Tensor &t : v.toTensorVector())
			if (is_npu(t))
				f(t);
	} else if (v.isOptionalTensorList()) {
		for (const c10::optional<at::Tensor> &t : v.toOptionalTensorList())
			if (t && is_npu(*t))
				f(*t);
	}
}

// The CPU value of one argument; tgt: the npu device of the first npu
// tensor or device argument, where the results go.
static c10::IValue to_cpu(const c10::IValue &v, c10::optional<at::Device> &tgt,
			  HostSide &host)
{
	if (v.isTensor()) {
		const at::Tensor &t = v.toTensor();

		if (!is_npu(t))
			return v;
		if (!tgt)
			tgt = t.device();
		return host.cpu(t);
	}
	if (v.isTensorList()) {
		c10::List<at::Tensor> out;

		for (const at::Tensor &t : v.toTensorVector()) {
			if (is_npu(t) && !tgt)
				tgt = t.device();
			out.push_back(is_npu(t) ? host.cpu(t) : t);
		}
		return out;
	}
	if (v.isOptionalTensorList()) {
		c10::List<c10::optional<at::Tensor>> out;

		for (const c10::optional<at::Tensor> &t : v.toOptionalTensorList()) {
			if (t && is_npu(*t)) {
				if (!tgt)
					tgt = t->device();
				out.push_back(host.cpu(*t));
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

static void run_on_cpu(const c10::OperatorHandle &op, torch::jit::Stack *stack,
		       bool results_to_device);

// VNPU_FALLBACK=error refuses an op the NPU lacks, but a call that PyTorch
// refuses on every device (a shape, a dim, an index out of range) is
// reported as PyTorch reports it, with its exception type, in every
// policy: the CPU kernel runs on host copies of the arguments, nothing
// goes back to the device, the generators it may draw from (npu's, which
// is the CPU's default, and any passed to it) are left as they were, and
// its error is raised. Only a call the CPU accepts meets the policy.
static void raise_cpu_error(const c10::OperatorHandle &op,
			    const torch::jit::Stack &stack)
{
	size_t n = op.schema().arguments().size();
	torch::jit::Stack args(stack.end() - n, stack.end());
	std::vector<std::pair<at::Generator, at::Tensor>> saved;

	saved.emplace_back(at::detail::getDefaultCPUGenerator(), at::Tensor());
	for (const c10::IValue &v : args)
		if (v.isGenerator())
			saved.emplace_back(v.toGenerator(), at::Tensor());
	for (auto &[gen, state] : saved)
		state = gen.get_state();
	auto restore = [&saved] {
		for (auto &[gen, state] : saved)
			gen.set_state(state);
	};
	try {
		run_on_cpu(op, &args, false);
	} catch (...) {
		restore();
		throw;
	}
	restore();
}

void cpu_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	std::string name = qualified_name(op);

	if (!vnpu_fallback_enter(name.c_str())) {
		enum vnpu_at_error code = vnpu_at_error_code();
		std::string refusal = vnpu_at_error_message();

		vnpu_at_error_clear();
		raise_cpu_error(op, *stack);
		vnpu_at_error_set(code, "%s", refusal.c_str());
		throw_dispatch_error(name.c_str());
	}
	try {
		run_on_cpu(op, stack);
	} catch (...) {
		vnpu_fallback_done(name.c_str(), false);
		throw;
	}
	vnpu_fallback_done(name.c_str(), true);
}

// Tensors of the meta device among the arguments: PrivateUse1 ranks
// above Meta, so PyTorch sends a call mixing them here, where the CPU
// would have gone to its Meta kernel (a module built on meta, its input
// on the device). The call runs on the Meta key as for the CPU: the npu
// tensors as meta tensors, the results meta, nothing written.
static bool run_on_meta(const c10::OperatorHandle &op, torch::jit::Stack *stack,
			size_t base, size_t n)
{
	bool meta = false;

	for (size_t i = 0; i < n; i++) {
		const c10::IValue &v = (*stack)[base + i];

		if (v.isTensor() && v.toTensor().defined())
			meta |= v.toTensor().is_meta();
		else if (v.isTensorList())
			for (const at::Tensor &t : v.toTensorVector())
				meta |= t.defined() && t.is_meta();
	}
	if (!meta)
		return false;
	for (size_t i = 0; i < n; i++) {
		c10::IValue &v = (*stack)[base + i];

		if (v.isTensor() && is_npu(v.toTensor())) {
			v = v.toTensor().to(at::kMeta);
		} else if (v.isTensorList()) {
			c10::List<at::Tensor> l;

			for (const at::Tensor &t : v.toTensorVector())
				l.push_back(is_npu(t) ? t.to(at::kMeta) : t);
			v = l;
		}
	}
	op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), stack);
	return true;
}

void run_on_cpu(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	run_on_cpu(op, stack, true);
}

// results_to_device false: the CPU kernel's results and writes stay on the host
static void run_on_cpu(const c10::OperatorHandle &op, torch::jit::Stack *stack,
		       bool results_to_device)
{
	const c10::FunctionSchema &schema = op.schema();
	const auto &args = schema.arguments();
	size_t n = args.size(), base = stack->size() - n;
	std::string name = qualified_name(op);
	DepthGuard depth(name);

	if (run_on_meta(op, stack, base, n))
		return;
	std::vector<c10::IValue> orig(stack->begin() + base, stack->end());
	c10::optional<at::Device> tgt;
	std::vector<c10::IValue> cpu_args;
	HostSide host;

	for (const c10::IValue &v : orig)
		each_npu_tensor(v, [&](const at::Tensor &t) { host.reach(t); });
	host.copy_in();
	for (size_t i = 0; i < n; i++) {
		cpu_args.push_back(to_cpu(orig[i], tgt, host));
		(*stack)[base + i] = cpu_args.back();
	}

	// a written CPU tensor of an op on npu tensors (an out= on the CPU):
	// PyTorch's kernels refuse tensors on two devices, the CPU kernel
	// here would not see it
	for (size_t i = 0; tgt && i < n; i++) {
		const c10::AliasInfo *ai = args[i].alias_info();

		if (ai && ai->isWrite() && orig[i].isTensor() &&
		    orig[i].toTensor().defined() &&
		    !is_npu(orig[i].toTensor()))
			TORCH_CHECK(false,
				    "Expected all tensors to be on the same device, but found at least two devices, ",
				    *tgt, " and ", orig[i].toTensor().device(), "! (",
				    name, ")");
	}
	op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

	const auto &rets = schema.returns();
	size_t nr = rets.size();
	TORCH_CHECK(stack->size() == base + nr, "torch_vnpu: CPU fallback of ",
		    name, ": the CPU kernel left ", stack->size() - base,
		    " values, expected ", nr);
	if (!results_to_device)
		return;
	// written arguments: the CPU copies were written, the npu tensors
	// they came from must be
	for (size_t i = 0; i < n; i++) {
		const c10::AliasInfo *ai = args[i].alias_info();

		if (!ai || !ai->isWrite())
			continue;
		if (orig[i].isTensor() && is_npu(orig[i].toTensor())) {
			host.written(orig[i].toTensor(), cpu_args[i].toTensor());
		} else if (orig[i].isTensorList()) {
			auto o = orig[i].toTensorVector();
			auto c = cpu_args[i].toTensorVector();

			for (size_t j = 0; j < o.size(); j++)
				if (is_npu(o[j]))
					host.written(o[j], c[j]);
		}
	}
	host.copy_out();
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

// PyTorch 1.13 runs a structured op (index.Tensor, erfinv, ...) on a
// backend without its kernel through its generic default: the meta
// function, an empty npu result, then the out= variant, which falls back.
// That runs the meta checks twice (each warning twice) and moves the
// result through an npu tensor it then copies into. Registering the
// fallback for those ops runs them once, directly on the CPU, as CUDA
// runs its own kernel. Ops with an NPU kernel keep it, and so do the
// in-place view ops (t_, squeeze_): they change the npu tensor's own
// geometry, which no CPU copy can.
void register_direct_fallbacks()
{
	static std::unique_ptr<torch::Library> lib;
	auto &d = c10::Dispatcher::singleton();

	if (lib)
		return;
	lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
					       c10::DispatchKey::PrivateUse1,
					       __FILE__, __LINE__);
	for (const c10::OperatorName &name : d.getAllOpNames()) {
		auto op = d.findOp(name);

		if (!op || name.name.rfind("aten::", 0) != 0 ||
		    op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
		    op->hasTag(at::Tag::inplace_view) ||
		    !op->hasKernelForDispatchKey(
			    c10::DispatchKey::CompositeExplicitAutogradNonFunctional))
			continue;
		std::string n = name.name.substr(6);

		if (!name.overload_name.empty())
			n += "." + name.overload_name;
		lib->impl(n.c_str(),
			  torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
	}
}

} // namespace torch_vnpu
