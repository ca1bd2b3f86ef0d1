/* SPDX-License-Identifier: MIT */
/*
 * Dispatcher internals shared by the core, the generated code and kernels:
 * operator and kernel structs, the hot-path table lookup, boxing helpers.
 */
#ifndef VNPU_DISPATCH_INTERNAL_H
#define VNPU_DISPATCH_INTERNAL_H

#include <stdatomic.h>

#include "vnpu_dispatch.h"
#include "vnpu_schema.h"
#include "vnpu/kernel_abi.h"
#include "vnpu_runtime.h"

/* Where a table entry came from (computeDispatchTableEntryWithDebug). */
enum vnpu_table_source {
	VNPU_SRC_MISSING = 0,
	VNPU_SRC_KERNEL,
	VNPU_SRC_COMPOSITE_EXPLICIT,
	VNPU_SRC_COMPOSITE_IMPLICIT,
	VNPU_SRC_AUTOGRAD_ALIAS,
	VNPU_SRC_FALLBACK,
	VNPU_SRC_FALLTHROUGH,
};

struct vnpu_kernel;
typedef void (*vnpu_boxed_call_fn)(const struct vnpu_kernel *k,
				   const struct vnpu_op *op, vnpu_keyset_t ks,
				   struct vnpu_stack *stack);

/* A kernel callable both ways: unboxed (typed pointer, may be NULL) and
 * boxed (the generated adapter of the unboxed pointer, or a user boxed
 * kernel through vnpu_kernel_call_user_boxed). */
struct vnpu_kernel {
	void *unboxed;
	vnpu_boxed_call_fn boxed;
	vnpu_boxed_kernel_fn user_boxed;
	uint8_t source;		/* enum vnpu_table_source */
	uint8_t key;		/* runtime key of the slot */
};

struct vnpu_registration {
	struct vnpu_registration *next;	/* older registration, same key */
	struct vnpu_op *op;		/* NULL for a backend fallback */
	enum vnpu_dispatch_key key;
	struct vnpu_kernel kernel;
	bool fallthrough;
};

struct vnpu_op {
	char *name;			/* "aten::add.Tensor" */
	struct vnpu_schema *schema;
	vnpu_boxed_call_fn unbox;	/* generated adapter, or NULL */
	vnpu_keyset_t non_fallthrough;
	uint32_t nargs, nrets;
	uint64_t tensor_args;		/* bit i: argument i holds tensors */
	bool mixes_devices;		/* a copy between devices (the yaml) */
	struct vnpu_kernel table[VNPU_NUM_RUNTIME_KEYS];
	struct vnpu_registration *kernels[VNPU_NUM_KEYS];	/* newest first */
	/* CPU fallback and profiler counters */
	_Atomic uint64_t fallback_count;
	_Atomic uint64_t fallback_rejected;	/* the CPU kernel refused */
	atomic_bool fallback_warned;
	_Atomic uint64_t prof_calls;
	_Atomic uint64_t prof_ns;
};

/* ---- the hot path -------------------------------------------------------- */

struct vnpu_tls_state {
	vnpu_keyset_t included_xor;	/* XOR the default included set */
	vnpu_keyset_t excluded;
};
extern _Thread_local struct vnpu_tls_state vnpu_tls;

#define VNPU_DEFAULT_INCLUDED \
	(VNPU_KS_FUNC(VNPU_FUNC_BACKEND_SELECT) | \
	 VNPU_KS_FUNC(VNPU_FUNC_AD_INPLACE_OR_VIEW))

struct vnpu_offset_mask {
	uint8_t offset;
	vnpu_keyset_t mask;
};
extern const struct vnpu_offset_mask vnpu_offsets[VNPU_NUM_FUNCTIONALITIES];

/* c10's getDispatchTableIndexForDispatchKeySet. */
static inline unsigned vnpu_keyset_index(vnpu_keyset_t ks)
{
	uint64_t f = ks >> VNPU_NUM_BACKENDS;
	unsigned fi;
	vnpu_keyset_t b;

	if (!f)
		return 0;
	fi = 64 - (unsigned)__builtin_clzll(f);
	b = ks & vnpu_offsets[fi].mask;
	return vnpu_offsets[fi].offset +
	       (b ? 63 - (unsigned)__builtin_clzll(b) : 0);
}

static inline vnpu_keyset_t vnpu_dispatch_keyset(const struct vnpu_op *op,
						 vnpu_keyset_t ks)
{
	ks |= vnpu_tls.included_xor ^ VNPU_DEFAULT_INCLUDED;
	ks &= VNPU_KS_FULL_BACKENDS | ~vnpu_tls.excluded;
	return ks & op->non_fallthrough;
}

static inline const struct vnpu_kernel *
vnpu_dispatch_kernel(const struct vnpu_op *op, vnpu_keyset_t ks)
{
	return &op->table[vnpu_keyset_index(ks)];
}

static inline vnpu_keyset_t vnpu_keys_of(const struct vnpu_at_tensor *t)
{
	return t ? t->keys : 0;
}

vnpu_keyset_t vnpu_list_keys(struct vnpu_at_tensor_list l);
/* {Dense + the device's backend}: what BackendSelect redispatches to. */
vnpu_keyset_t vnpu_backend_keyset(struct vnpu_at_device dev);
/* The key set of a tensor on dev (Dense + backend). */
vnpu_keyset_t vnpu_device_keys(struct vnpu_at_device dev);

/* ---- errors -------------------------------------------------------------- */

/* Counts errors set on this thread: a boxed call failed iff it changed. */
uint64_t vnpu_error_seq(void);
/* An error set since vnpu_error_seq() was seq has been handled (an NPU
 * kernel's unsupported call, sent to the fallback): as if none was set,
 * so that a boxed caller does not take the call for a failed one. */
void vnpu_error_retract(uint64_t seq);
/* "aten::op: argument 'name' is None" unless an error is already set. */
void *vnpu_null_arg(const struct vnpu_op *op, const char *name);

/* ---- the device check of backend kernels' arguments (device_check.c) ------ */

/* One check's state: the device of the first tensor argument seen. */
struct vnpu_device_check {
	const struct vnpu_op *op;
	bool have;
	struct vnpu_at_device device;
};

/* False, with PyTorch's "Expected all tensors to be on the same device"
 * naming arg, when t (if any) is on another device than those before. */
bool vnpu_device_check_arg(struct vnpu_device_check *c, const struct vnpu_at_tensor *t,
			   const char *arg);
bool vnpu_device_check_list(struct vnpu_device_check *c, struct vnpu_at_tensor_list l,
			    const char *arg);

/* ---- boxing helpers used by the generated adapters ------------------------ */

void vnpu_kernel_call_user_boxed(const struct vnpu_kernel *k,
				 const struct vnpu_op *op, vnpu_keyset_t ks,
				 struct vnpu_stack *stack);
bool vnpu_stack_has(const struct vnpu_op *op, struct vnpu_stack *s,
		    size_t n);
bool vnpu_stack_returns_ok(const struct vnpu_op *op, struct vnpu_stack *s,
			   size_t nrets);

bool vnpu_iv_get_tensor(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_tensor **out);
bool vnpu_iv_get_opt_tensor(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_tensor **out);
bool vnpu_iv_get_tensor_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			     const char *name,
			     struct vnpu_at_tensor_list *out);
bool vnpu_iv_get_int(const struct vnpu_op *op, struct vnpu_ivalue *v,
		     const char *name, int64_t *out);
bool vnpu_iv_get_opt_int(const struct vnpu_op *op, struct vnpu_ivalue *v,
			 const char *name, struct vnpu_at_opt_int *out);
bool vnpu_iv_get_int_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			  const char *name, struct vnpu_at_int_array *out);
bool vnpu_iv_get_opt_int_list(const struct vnpu_op *op,
			      struct vnpu_ivalue *v, const char *name,
			      struct vnpu_at_opt_int_array *out);
bool vnpu_iv_get_bool_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			   const char *name, struct vnpu_at_bool_list *out);
bool vnpu_iv_get_double(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, double *out);
bool vnpu_iv_get_opt_double(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_opt_double *out);
bool vnpu_iv_get_bool(const struct vnpu_op *op, struct vnpu_ivalue *v,
		      const char *name, bool *out);
bool vnpu_iv_get_string(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, const char **out);
bool vnpu_iv_get_scalar(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_scalar *out);
bool vnpu_iv_get_opt_scalar(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_scalar *out);
bool vnpu_iv_get_dtype(const struct vnpu_op *op, struct vnpu_ivalue *v,
		       const char *name, enum vnpu_at_dtype *out);
bool vnpu_iv_get_device(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_device *out);

/* Returns: push moves ownership onto the stack; take moves it out. */
void vnpu_iv_push_ret_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t);
void vnpu_iv_push_ret_scalar(struct vnpu_stack *s, struct vnpu_at_scalar v);
void vnpu_iv_push_ret_int(struct vnpu_stack *s, int64_t v);
void vnpu_iv_push_ret_double(struct vnpu_stack *s, double v);
void vnpu_iv_push_ret_bool(struct vnpu_stack *s, bool v);
void vnpu_iv_take_ret_tensor(struct vnpu_ivalue *v, struct vnpu_at_tensor **r);
void vnpu_iv_take_ret_scalar(struct vnpu_ivalue *v, struct vnpu_at_scalar *r);
void vnpu_iv_take_ret_int(struct vnpu_ivalue *v, int64_t *r);
void vnpu_iv_take_ret_double(struct vnpu_ivalue *v, double *r);
void vnpu_iv_take_ret_bool(struct vnpu_ivalue *v, bool *r);

/* ---- generated tables -------------------------------------------------------- */

struct vnpu_gen_op_def {
	const char *schema;		/* "aten::add.Tensor(...) -> Tensor" */
	vnpu_boxed_call_fn unbox;
	bool mixes_devices;		/* the yaml's mixes_devices (copies) */
};
struct vnpu_gen_kernel {
	uint32_t op;			/* index into vnpu_gen_op_defs */
	enum vnpu_dispatch_key key;
	void *fn;
};
extern struct vnpu_op *vnpu_gen_ops[];
extern const struct vnpu_gen_op_def vnpu_gen_op_defs[];
extern const struct vnpu_gen_kernel vnpu_gen_kernels[];
extern const size_t vnpu_gen_num_kernels;

/* def with the generated adapter (the registry's internal form). */
struct vnpu_op *vnpu_def_internal(const char *schema, vnpu_boxed_call_fn unbox);
/* vnpu_fallback without the init call (used during init). */
struct vnpu_registration *vnpu_fallback_internal(enum vnpu_dispatch_key key,
						 vnpu_boxed_kernel_fn fn);
/* Registers the dispatcher's own fallbacks (CPU fallback on PrivateUse1,
 * autograd, profiler, fallthroughs). */
void vnpu_register_builtin_fallbacks(void);
/* Autograd's boxed fallback for ops without an autograd kernel. */
void vnpu_autograd_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
			    struct vnpu_stack *stack);
void vnpu_profiler_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
			    struct vnpu_stack *stack);

/* ---- storages, autograd ------------------------------------------------------ */

/* A storage of nbytes on dev (npu: from the dispatcher's caching device
 * allocator); refcount 1. NULL with the error set. */
struct vnpu_at_storage *vnpu_storage_new(size_t nbytes, struct vnpu_at_device dev);
void vnpu_storage_release(struct vnpu_at_storage *s);
/* A tensor on a storage (takes the storage reference). */
struct vnpu_at_tensor *vnpu_tensor_on_storage(struct vnpu_at_storage *s,
					      uint32_t ndim,
					      const int64_t *sizes,
					      const int64_t *strides,
					      int64_t offset,
					      enum vnpu_at_dtype dtype);
/* Bytes a strided tensor spans from element 0 (0 when empty); false on
 * overflow or negative sizes/strides. */
bool vnpu_strided_span(uint32_t ndim, const int64_t *sizes,
		       const int64_t *strides, size_t itemsize, size_t *bytes);
void vnpu_at_contiguous_strides_impl(uint32_t ndim, const int64_t *sizes,
				     int64_t *strides);
int64_t vnpu_at_shape_numel_impl(uint32_t ndim, const int64_t *sizes);
void vnpu_autograd_meta_free(struct vnpu_autograd_meta *m);
/* The npu state (npu_state.c): libvnpurt started lazily, once per
 * process; vnpu_npu_ready also selects the thread's device on its first
 * use (false with the error set if the runtime cannot start); the
 * thread's current device and stream (vnpu_at_npu_set_device/_stream). */
bool vnpu_npu_runtime_init(void);
bool vnpu_npu_ready(void);
int vnpu_npu_current_device(void);
vnpu_stream_t vnpu_npu_stream(void);
struct vnpu_at_device vnpu_npu_device(void);

/* The gradients of a normalisation (autograd_ops.c), shared by the
 * autograd of layer and batch norm and by their backward ops:
 * input (train: statistics of this batch; else grad * weight * rstd),
 * weight and bias summed over the `outer` dims and shaped wshape, each
 * where want[i] asks (in[i] NULL otherwise). f16/bf16 computed in f32:
 * the input gradient is rounded to x's dtype, the others are float32.
 * false (error set) when an op failed. */
bool vnpu_norm_backward(const bool want[3], struct vnpu_at_tensor *g,
			struct vnpu_at_tensor *x, struct vnpu_at_tensor *w,
			struct vnpu_at_tensor *mean, struct vnpu_at_tensor *rstd,
			bool train, const int64_t *inner, uint32_t ninner,
			const int64_t *outer, uint32_t nouter,
			struct vnpu_at_int_array wshape,
			struct vnpu_at_tensor **in);
/* The indices of max_pool2d_with_indices (positions within each plane
 * of hw elements, [planes, outs] when flattened) as positions in the
 * flattened input: each plane's offset added (autograd_ops.c, beside
 * vnpu_norm_backward: both serve the autograd and the backward ops). */
struct vnpu_at_tensor *vnpu_max_pool_flat_indices(struct vnpu_at_tensor *indices,
						  int64_t planes, int64_t outs, int64_t hw);

#endif /* VNPU_DISPATCH_INTERNAL_H */
