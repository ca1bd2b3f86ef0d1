// SPDX-License-Identifier: MIT
// torch_vnpu's C++ glue: what PyTorch's API demands in C++ (allocator,
// guard, boxed kernels, fallback, Python module); the work is done by the
// dispatcher's NPU kernels (dispatcher/) over libvnpurt. docs/torch.md.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Allocator.h>

#include <vector>

extern "C" {
#include "vnpu_frontend.h"
}

namespace torch_vnpu {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;

// The allocator of npu storages: the dispatcher's storages, so that the
// NPU storage descriptor (format, base sizes) travels with PyTorch's.
c10::Allocator *npu_allocator();
// The dispatcher storage behind an npu tensor's storage, or nullptr when
// the storage was not made by npu_allocator.
struct vnpu_at_storage *storage_of(const c10::Storage &s);
struct vnpu_at_storage *storage_of_data_ptr(const c10::DataPtr &p);
// A new reference to the dispatcher storage of an npu storage: its own,
// or, for memory torch_vnpu did not allocate (PyTorch's from_blob of a
// device pointer, as its serialization does), one that borrows it.
struct vnpu_at_storage *acquire_storage(const c10::Storage &s);
// A PyTorch storage holding a reference to the dispatcher storage s.
c10::Storage wrap_storage(struct vnpu_at_storage *s);

// storage.resize_(newsize) of an npu storage: a new block holding the old
// bytes that fit (ND storages only).
void resize_storage_bytes(const c10::Storage &storage, size_t newsize);

// Copies len bytes at byte offset off of an npu storage to host memory
// (to_host) or from it; synchronous.
void copy_storage_bytes(const c10::Storage &npu, int64_t off, int64_t len,
			void *host, bool to_host);

// The thread's npu device index (starts the runtime; throws if it fails).
int current_device();
void set_device(int index);
// Waits for all work on device `index` (< 0: the current one), throws
// if it failed; the calling thread's device is the same afterwards.
void synchronize_device(int index);
int device_count();
// Whether this process has started the runtime (a device "context").
bool runtime_started();

// Throws the dispatcher's pending error as a Python RuntimeError (or
// IndexError / ValueError where PyTorch raises those), naming `what`.
[[noreturn]] void throw_dispatch_error(const char *what);

// Boxed kernels registered by the generated registration file.
void run_npu_kernel(const char *c_name, const c10::OperatorHandle &op,
		    c10::DispatchKeySet ks, torch::jit::Stack *stack);
// Where an op goes when its NPU kernel cannot take the call: the
// dtype-agnostic paths of allocation and copies (any dtype on the npu),
// else the CPU fallback.
void leave_to_cpu(const char *c_name, const c10::OperatorHandle &op,
		  torch::jit::Stack *stack);
// The same for an op whose result holds memory nothing wrote (the
// yaml's `uninitialized`): under use_deterministic_algorithms with
// fill_uninitialized_memory, that memory is filled (NaN, the integer
// maximum) as PyTorch's own backends fill it.
void run_npu_uninitialized(const char *c_name, const c10::OperatorHandle &op,
			   c10::DispatchKeySet ks, torch::jit::Stack *stack);
// Facts of an op that its kernels and its out= and in-place variants
// check, beyond TensorIterator's rules (the yaml's out_dtype,
// out_no_overlap, silent_resize and any_dtype keys; generated in
// register_npu.cpp).
struct OpFacts {
	enum OutDtype {
		OUT_CASTS,		// any dtype the result casts to
		OUT_INPUT,		// the input's (amax)
		OUT_UNARY,		// the input's (unary_op: neg, abs)
		OUT_VALUES_INDICES,	// the input's, and int64 (max.dim)
		OUT_RESULT,		// the result's exactly (where)
		OUT_BOOLEAN,		// bool (isposinf)
		OUT_BYTEBOOL,		// bool or uint8 (all, any)
		OUT_SELF_RESULT,	// the input's (index_select)
		OUT_SELF_TYPEMETA,	// the input's, in TypeMeta words (gather)
		OUT_DTYPE_ARG,		// dtype='s exactly, when given; else
					// the op computes in the out='s (sum)
		OUT_DTYPE_ARG_FLOATING,	// the same for a floating out= (mean)
		OUT_RESULT_TYPEMETA,	// the result's, in TypeMeta words
					// (linalg_vector_norm)
		OUT_LONG,		// int64 exactly (nonzero)
	} out_dtype = OUT_CASTS;
	bool out_no_overlap = false;	// no memory shared with an input at all
	bool silent_resize = false;	// resize_ of out= and self (addbmm)
	// allocation and copies torch_vnpu does for every dtype (any_dtype)
	enum AnyDtype {
		ANY_NONE,
		ANY_EMPTY,			// empty.memory_format
		ANY_EMPTY_STRIDED,
		ANY_RESIZE,			// resize_
		ANY_COPY,			// copy_
		ANY_COPY_FROM,
		ANY_COPY_FROM_AND_RESIZE,
	} any_dtype = ANY_NONE;
};
OpFacts op_facts(const char *c_name);

// A functional kernel serving PyTorch's in-place (add_) or out= (add.out)
// variant: the result is checked as PyTorch's structured kernels check it
// (cast, shape; out= resizes) and copied into the written argument.
// tensor_iterator: PyTorch computes the op with TensorIterator (the yaml's
// structured_inherits), which never resizes an out= that is also an input.
void run_npu_variant(const char *c_name, const c10::OperatorHandle &op,
		     c10::DispatchKeySet ks, torch::jit::Stack *stack,
		     bool tensor_iterator);
void npu_backend_select(const c10::OperatorHandle &op,
			torch::jit::Stack *stack);
// The CPU fallback for PrivateUse1 (every op without an NPU kernel, and
// those an NPU kernel leaves to the CPU).
void cpu_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack);
// The fallback registered for the structured aten ops without an NPU
// kernel, which PyTorch would otherwise run through their out= variant.
void register_direct_fallbacks();
// The same without the policy and the report: for the ops torch_vnpu
// runs on the host by design (random numbers, random.cpp).
void run_on_cpu(const c10::OperatorHandle &op, torch::jit::Stack *stack);

} // namespace torch_vnpu
