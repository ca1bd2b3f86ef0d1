// SPDX-License-Identifier: MIT
// The typed calling convention of the generated registrations
// (register_npu.cpp, from the yaml): PyTorch calls an op's kernel with
// C++ arguments, and the kernel converts each to the dispatcher's C type
// and calls the dispatcher's typed entry of the op (vnpu_redispatch_<op>
// of vnpu_ops.h) for the PrivateUse1 key: no stack on either side, no
// lookup by name. What the NPU cannot take (a dtype the dispatcher lacks,
// a kernel that leaves the op to the CPU) runs on PyTorch's CPU kernels
// through the one CPU fallback, with the same arguments boxed.
#pragma once
#include "backend.h"

#include <ATen/core/boxing/impl/boxing.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace torch_vnpu {

// PyTorch's operator, for the CPU fallback.
c10::OperatorHandle torch_op(const char *name, const char *overload);

// While it lives, the dispatcher leaves what would fall back to the CPU
// to this front end (VNPU_AT_ERR_FALLBACK_DEFERRED).
struct FallbackDeferral {
	bool prev = vnpu_fallback_defer_begin();
	FallbackDeferral() = default;
	FallbackDeferral(const FallbackDeferral &) = delete;
	FallbackDeferral &operator=(const FallbackDeferral &) = delete;
	~FallbackDeferral() { vnpu_fallback_defer_end(prev); }
};

// One call of a dispatcher kernel from typed arguments. Each in()
// converts the next argument; an in() or run() that returns false leaves
// the call to the CPU (nothing ran on the NPU). Errors of the arguments
// or the kernel are thrown, as PyTorch's are.
class TypedCall {
public:
	explicit TypedCall(const char *c_name) : c_name_(c_name) {}
	~TypedCall();
	TypedCall(const TypedCall &) = delete;
	TypedCall &operator=(const TypedCall &) = delete;

	bool in(const at::Tensor &t, struct vnpu_at_tensor **out);
	bool in(const std::optional<at::Tensor> &t, struct vnpu_at_tensor **out);
	bool in(const c10::List<std::optional<at::Tensor>> &v,
		struct vnpu_at_tensor_list *out);
	bool in(const at::Scalar &v, struct vnpu_at_scalar *out);
	bool in(const std::optional<at::Scalar> &v, struct vnpu_at_scalar *out);
	bool in(int64_t v, int64_t *out);
	bool in(c10::SymInt v, int64_t *out);
	bool in(std::optional<int64_t> v, struct vnpu_at_opt_int *out);
	bool in(std::optional<c10::SymInt> v, struct vnpu_at_opt_int *out);
	bool in(double v, double *out);
	bool in(std::optional<double> v, struct vnpu_at_opt_double *out);
	bool in(bool v, bool *out);
	bool in(c10::IntArrayRef v, struct vnpu_at_int_array *out);
	bool in(c10::SymIntArrayRef v, struct vnpu_at_int_array *out);
	bool in(at::OptionalIntArrayRef v, struct vnpu_at_opt_int_array *out);
	bool in(at::OptionalSymIntArrayRef v, struct vnpu_at_opt_int_array *out);
	bool in(at::ScalarType v, enum vnpu_at_dtype *out);
	bool in(std::optional<at::ScalarType> v, enum vnpu_at_dtype *out);
	bool in(std::optional<at::Device> v, struct vnpu_at_device *out);
	bool in(c10::string_view v, const char **out);
	// bool[N]: PyTorch's output masks
	template <size_t N>
	bool in(const std::array<bool, N> &v, struct vnpu_at_bool_list *out)
	{
		static_assert(N <= VNPU_AT_BOOL_LIST_MAX, "a bool[N] past 64");
		*out = { (uint32_t)N, 0 };
		for (size_t i = 0; i < N; i++)
			if (v[i])
				out->bits |= UINT64_C(1) << i;
		return true;
	}
	// a shape argument (size, stride): past the dispatcher's 8 dims it
	// is PyTorch's kernels' to take
	bool shape(c10::IntArrayRef v, struct vnpu_at_int_array *out);
	bool shape(c10::SymIntArrayRef v, struct vnpu_at_int_array *out);
	// an argument of PyTorch's schema that the dispatcher's leaves out:
	// fine when it asks for what the kernel does anyway
	bool torch_only(const char *name, const c10::IValue &v);

	// Runs kernel() (the typed entry with the converted arguments, which
	// keep()s its tensor results) with the CPU fallback deferred; false
	// when the kernel left the op to the CPU.
	template <class F> bool run(F &&kernel)
	{
		begin();
		{
			FallbackDeferral d;

			kernel();
		}
		return finished();
	}

	// The results, as PyTorch's; a NULL tensor is an undefined one (a
	// gradient an output mask did not ask for). A tensor result is
	// keep()t by the call, released at its end (PyTorch's holds its own
	// reference), also when a conversion throws.
	void keep(struct vnpu_at_tensor *t);
	at::Tensor out(struct vnpu_at_tensor *t);
	static at::Scalar out(struct vnpu_at_scalar v);
	static int64_t out(int64_t v) { return v; }
	static double out(double v) { return v; }
	static bool out(bool v) { return v; }

private:
	void begin();
	bool finished();
	bool tensor(const at::Tensor &t, struct vnpu_at_tensor **out);

	const char *c_name_;
	// dispatcher tensors of the arguments and results, released at the end
	c10::SmallVector<struct vnpu_at_tensor *, 4> owned_;
	// the tensor arguments, for the results that share their storage
	// (borrowed: the caller holds them for the call)
	c10::SmallVector<const at::Tensor *, 4> inputs_;
	// NUL-terminated copies of string arguments (lists: nothing is
	// allocated for the calls that have none)
	std::list<std::string> strings_;
	// the dispatcher tensors of Tensor?[] arguments (NULL: None), and
	// the list's tensors, held for inputs_
	std::list<std::vector<struct vnpu_at_tensor *>> lists_;
	std::list<at::Tensor> held_;
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
