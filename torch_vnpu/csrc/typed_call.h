// SPDX-License-Identifier: MIT
// The typed calling convention of the generated registrations
// (register_npu.cpp, from the yaml): PyTorch calls an op's kernel with
// C++ arguments, and the kernel puts them on the dispatcher's stack in
// the order of the dispatcher's schema (known when it was generated) and
// runs the NPU kernel; no boxed PyTorch stack, no lookup by name. What
// the NPU cannot take (a dtype the dispatcher lacks, a kernel that leaves
// the op to the CPU) runs on PyTorch's CPU kernels through the one CPU
// fallback, with the same arguments boxed.
#pragma once
#include "backend.h"

#include <ATen/core/boxing/impl/boxing.h>
#include <c10/util/MaybeOwned.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <utility>
#include <vector>

extern "C" {
#include "vnpu_schema.h"
}

namespace torch_vnpu {

// Dispatcher references owned while one call runs.
struct CTensors {
	std::vector<struct vnpu_at_tensor *> v;
	CTensors() = default;
	CTensors(const CTensors &) = delete;
	CTensors &operator=(const CTensors &) = delete;
	~CTensors()
	{
		for (auto *t : v)
			vnpu_at_release(t);
	}
};

struct CStack {
	struct vnpu_stack s;
	CStack() { vnpu_stack_init(&s); }
	~CStack() { vnpu_stack_destroy(&s); }
	CStack(const CStack &) = delete;
	CStack &operator=(const CStack &) = delete;
};

// The dispatcher's operator c_name ("aten::add.Tensor"); throws when it
// has none (the registrations and the dispatcher come from one yaml).
const struct vnpu_op *dispatcher_op(const char *c_name);
// PyTorch's operator, for the CPU fallback.
c10::OperatorHandle torch_op(const char *name, const char *overload);

// One call of a dispatcher kernel from typed arguments. Each arg() takes
// the next argument of the dispatcher's schema; an arg() or run() that
// returns false leaves the call to the CPU (nothing ran on the NPU).
// Errors of the arguments or the kernel are thrown, as PyTorch's are.
class TypedCall {
public:
	TypedCall(const char *c_name, const struct vnpu_op *op);

	bool arg(const at::Tensor &t);
	bool arg(const std::optional<at::Tensor> &t);
	bool arg(const at::Scalar &v);
	bool arg(int64_t v);
	bool arg(c10::SymInt v);
	bool arg(double v);
	bool arg(bool v);
	bool arg(c10::IntArrayRef v);
	bool arg(c10::SymIntArrayRef v);
	// the other types PyTorch's schemas have, through their IValue
	template <class T> bool arg(const T &v)
	{
		return arg_value(c10::IValue(v));
	}
	// an argument of PyTorch's schema that the dispatcher's leaves out:
	// fine when it asks for what the kernel does anyway
	bool torch_only(const char *name, const c10::IValue &v);
	// false when the kernel left the op to the CPU
	bool run();
	template <class Ret> Ret result()
	{
		torch::jit::Stack s = results();
		return c10::impl::PopResult<Ret>::call(s);
	}

private:
	const struct vnpu_schema_arg *next();
	bool arg_value(const c10::IValue &v);
	bool push_value(const struct vnpu_schema_arg *a, const c10::IValue &v);
	bool tensor(const at::Tensor &t);
	void input(c10::MaybeOwned<at::Tensor> t);
	torch::jit::Stack results();

	const char *c_name_;
	const struct vnpu_op *op_;
	const struct vnpu_schema *schema_;
	uint32_t next_ = 0;
	CTensors owned_;
	CStack stack_;
	// the tensor arguments, for the results that alias them and for the
	// kernels that replace an argument's storage: borrowed from the
	// caller, who holds them for the call (a copy of a tensor Python
	// owns takes a reference on its Python object, under the GIL)
	c10::SmallVector<c10::MaybeOwned<at::Tensor>, 4> inputs_;
	// (index in inputs_, the dispatcher's tensor)
	c10::SmallVector<std::pair<size_t, struct vnpu_at_tensor *>, 4> tensor_args_;
};

// What a call the NPU could not take runs on instead: the same as for a
// boxed kernel (leave_to_cpu), with typed arguments.
template <class Ret, class... Args>
Ret typed_leave_to_cpu(const char *c_name, const c10::OperatorHandle &op,
		       const Args &...args)
{
	torch::jit::Stack s = c10::impl::boxArgs<const Args &...>(args...);

	leave_to_cpu(c_name, op, &s);
	return c10::impl::PopResult<Ret>::call(s);
}

} // namespace torch_vnpu
