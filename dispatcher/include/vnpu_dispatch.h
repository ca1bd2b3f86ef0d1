/* SPDX-License-Identifier: MIT */
/*
 * vnpu dispatcher: tensors, dtypes, devices, scalars, tagged values, dispatch
 * keys and key sets, operator registration and calls, with PyTorch c10's
 * semantics (docs/dispatcher.md is the guide).
 *
 * Conventions
 *  - Tensor arguments are borrowed; every tensor an op or a constructor
 *    returns is a new reference the caller releases (vnpu_at_release). An
 *    in-place or out= op returns its mutated argument with a new reference.
 *  - Errors: an op that fails returns NULL (or 0 / an empty value) and sets
 *    the calling thread's dispatch error (vnpu_at_error_*): a code and a
 *    message naming the operator ("aten::mm: shapes [2,3] and [4,5] cannot
 *    be multiplied"). Nothing aborts.
 *  - Registration (def/impl/fallback) takes a lock and may run at any time;
 *    calls read the tables without locking, so register before calling from
 *    other threads (as with torch.library).
 *  - The typed entry points (vnpu_op_<name>_<overload>) are generated from
 *    dispatcher/ops/native_functions.yaml into vnpu_ops.h.
 */
#ifndef VNPU_DISPATCH_H
#define VNPU_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum vnpu_at_error {
	VNPU_AT_OK = 0,
	VNPU_AT_ERR_VALUE,		/* bad argument (shape, dim, dtype) */
	VNPU_AT_ERR_NO_KERNEL,		/* no kernel for the dispatch key */
	VNPU_AT_ERR_SCHEMA,		/* malformed or mismatched schema */
	VNPU_AT_ERR_REGISTRATION,	/* def/impl/fallback refused */
	VNPU_AT_ERR_DEVICE,		/* the runtime failed */
	VNPU_AT_ERR_OOM,		/* host or device memory exhausted */
	VNPU_AT_ERR_FALLBACK,		/* CPU fallback refused by policy */
	VNPU_AT_ERR_AUTOGRAD,		/* autograd misuse */
	VNPU_AT_ERR_FALLBACK_DEFERRED,	/* left to the front end's CPU
					 * fallback (vnpu_frontend.h) */
	VNPU_AT_ERR_INDEX,		/* a dim or an index value out of
					 * range (PyTorch's IndexError) */
	VNPU_AT_ERR_UNSUPPORTED,	/* an NPU kernel cannot take the call
					 * (a dtype or layout it lacks): its
					 * generated entry sends it to the
					 * fallback; no caller sees it */
};

/* The calling thread's pending error (VNPU_AT_OK when none) and its text;
 * the text stays valid until the thread's next error. */
enum vnpu_at_error vnpu_at_error_code(void);
const char *vnpu_at_error_message(void);
void vnpu_at_error_clear(void);
/* Sets the thread's error (kernels use it; printf-style). Returns NULL so
 * kernels can `return vnpu_at_error_set(...)`. */
void *vnpu_at_error_set(enum vnpu_at_error code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- dtypes, devices, scalars -------------------------------------------- */

/* Element types; numbering follows c10::ScalarType where it exists. */
enum vnpu_at_dtype {
	VNPU_AT_DTYPE_NONE = -1,	/* "ScalarType? = None" */
	VNPU_AT_U8 = 0,
	VNPU_AT_I8 = 1,
	VNPU_AT_I16 = 2,
	VNPU_AT_I32 = 3,
	VNPU_AT_I64 = 4,
	VNPU_AT_F16 = 5,
	VNPU_AT_F32 = 6,
	VNPU_AT_F64 = 7,
	VNPU_AT_BOOL = 11,
	VNPU_AT_BF16 = 15,
};
#define VNPU_AT_DTYPE_LIMIT 16

size_t vnpu_at_dtype_size(enum vnpu_at_dtype dtype);	/* 0 if unknown */
const char *vnpu_at_dtype_name(enum vnpu_at_dtype dtype);	/* "float32" */
bool vnpu_at_dtype_is_float(enum vnpu_at_dtype dtype);	/* f16 bf16 f32 f64 */
bool vnpu_at_dtype_valid(enum vnpu_at_dtype dtype);
/* PyTorch's promotion of two tensor dtypes (bool < ints < floats). */
enum vnpu_at_dtype vnpu_at_promote(enum vnpu_at_dtype a, enum vnpu_at_dtype b);
/* PyTorch's default dtype (torch.set_default_dtype), process-wide as
 * c10's: the dtype of float factories without one, of float Python
 * scalars in promotion and of float ops on integer tensors. float32 at
 * start; only floating dtypes are accepted. */
enum vnpu_at_dtype vnpu_at_default_dtype(void);
bool vnpu_at_set_default_dtype(enum vnpu_at_dtype dtype);

enum vnpu_at_device_type {
	VNPU_AT_DEVICE_NONE = -1,	/* "Device? = None" */
	VNPU_AT_CPU = 0,
	VNPU_AT_NPU = 1,	/* PrivateUse1, registered under the name "npu" */
};

struct vnpu_at_device {
	int8_t type;		/* enum vnpu_at_device_type */
	int8_t index;		/* npu:N; 0 for the CPU */
};

#define VNPU_AT_DEV_CPU ((struct vnpu_at_device){ VNPU_AT_CPU, 0 })
#define VNPU_AT_DEV_NPU(n) ((struct vnpu_at_device){ VNPU_AT_NPU, (n) })
#define VNPU_AT_DEV_NONE ((struct vnpu_at_device){ VNPU_AT_DEVICE_NONE, 0 })

enum vnpu_at_scalar_kind {
	VNPU_AT_SCALAR_NONE = 0,	/* "Scalar? = None" */
	VNPU_AT_SCALAR_INT,
	VNPU_AT_SCALAR_DOUBLE,
	VNPU_AT_SCALAR_BOOL,
};

struct vnpu_at_scalar {
	enum vnpu_at_scalar_kind kind;
	union {
		int64_t i;
		double d;
		bool b;
	};
};

#define VNPU_AT_INT(v) ((struct vnpu_at_scalar){ .kind = VNPU_AT_SCALAR_INT, .i = (v) })
#define VNPU_AT_DOUBLE(v) ((struct vnpu_at_scalar){ .kind = VNPU_AT_SCALAR_DOUBLE, .d = (v) })
#define VNPU_AT_BOOLV(v) ((struct vnpu_at_scalar){ .kind = VNPU_AT_SCALAR_BOOL, .b = (v) })
#define VNPU_AT_SCALAR_NONEV ((struct vnpu_at_scalar){ .kind = VNPU_AT_SCALAR_NONE })

double vnpu_at_scalar_to_double(struct vnpu_at_scalar s);
int64_t vnpu_at_scalar_to_int(struct vnpu_at_scalar s);
/* PyTorch's checked conversion of a Scalar written into a tensor of dtype
 * (c10::checked_convert): anything goes into bool; an integer into
 * uint8 may be negative down to -255 (it wraps); a float must be in range
 * (inf and NaN only into float dtypes). False with PyTorch's "value cannot
 * be converted to type int without overflow" set. */
bool vnpu_at_scalar_fits(struct vnpu_at_scalar s, enum vnpu_at_dtype dtype);
/* The integer s stores as in an integer or bool dtype: (x != 0) for bool
 * (0.5 and NaN are true), truncation for the others. */
int64_t vnpu_at_scalar_to_int_as(struct vnpu_at_scalar s,
				 enum vnpu_at_dtype dtype);

/* Argument types of the typed entry points (borrowed views). */
struct vnpu_at_int_array {	/* int[], SymInt[]; .v may be NULL if n == 0 */
	const int64_t *v;
	int64_t n;
};
struct vnpu_at_opt_int_array {	/* int[]? */
	bool has;
	struct vnpu_at_int_array a;
};
struct vnpu_at_bool_list {	/* bool[N], N <= 64 (PyTorch's output masks,
				 * bool[3]): element i is bit i */
	uint32_t n;
	uint64_t bits;
};
#define VNPU_AT_BOOL_LIST_MAX 64
static inline bool vnpu_at_bool_list_at(struct vnpu_at_bool_list l, uint32_t i)
{
	return i < l.n && (l.bits >> i & 1);
}
struct vnpu_at_opt_int {	/* int?, SymInt? */
	bool has;
	int64_t v;
};
struct vnpu_at_opt_double {	/* float? */
	bool has;
	double v;
};
struct vnpu_at_tensor;
struct vnpu_at_tensor_list {	/* Tensor[], Tensor?[] (NULL entries = None) */
	struct vnpu_at_tensor *const *v;
	int64_t n;
};

#define VNPU_AT_INTS(...) \
	((struct vnpu_at_int_array){ (const int64_t[]){ __VA_ARGS__ }, \
		sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t) })
#define VNPU_AT_NO_INTS ((struct vnpu_at_int_array){ NULL, 0 })
#define VNPU_AT_SOME_INT(x) ((struct vnpu_at_opt_int){ true, (x) })
#define VNPU_AT_NO_INT ((struct vnpu_at_opt_int){ false, 0 })

/* ---- dispatch keys and key sets ------------------------------------------ */

/*
 * A key set is one uint64_t: bits 0..VNPU_NUM_BACKENDS-1 are backends
 * (CPU, then PrivateUse1 "npu"), the bits above are functionalities in
 * priority order (Dense < BackendSelect < ADInplaceOrView < Autograd <
 * Profiler). The highest functionality bit wins; for a per-backend
 * functionality (Dense, Autograd) the highest backend bit picks the slot.
 */
typedef uint64_t vnpu_keyset_t;

enum vnpu_backend_bit {
	VNPU_BACKEND_CPU = 0,
	VNPU_BACKEND_PRIVATEUSE1 = 1,
	VNPU_NUM_BACKENDS = 2,
};

enum vnpu_functionality {
	VNPU_FUNC_UNDEFINED = 0,	/* no bit */
	VNPU_FUNC_DENSE = 1,		/* per backend */
	VNPU_FUNC_BACKEND_SELECT = 2,
	VNPU_FUNC_AD_INPLACE_OR_VIEW = 3,
	VNPU_FUNC_AUTOGRAD = 4,		/* per backend */
	VNPU_FUNC_PROFILER = 5,
	VNPU_NUM_FUNCTIONALITIES = 6,
};

/* Runtime keys (one table slot each) then alias keys (no slot). */
enum vnpu_dispatch_key {
	VNPU_KEY_UNDEFINED = 0,
	VNPU_KEY_CPU,
	VNPU_KEY_PRIVATEUSE1,		/* named "npu" */
	VNPU_KEY_BACKEND_SELECT,
	VNPU_KEY_AD_INPLACE_OR_VIEW,
	VNPU_KEY_AUTOGRAD_CPU,
	VNPU_KEY_AUTOGRAD_PRIVATEUSE1,
	VNPU_KEY_PROFILER,
	VNPU_NUM_RUNTIME_KEYS,
	/* alias keys */
	VNPU_KEY_AUTOGRAD = VNPU_NUM_RUNTIME_KEYS,
	VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD,
	VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD,
	VNPU_NUM_KEYS,
};

#define VNPU_KS_BACKEND(b) ((vnpu_keyset_t)1 << (b))
#define VNPU_KS_FUNC(f) ((vnpu_keyset_t)1 << (VNPU_NUM_BACKENDS + (f) - 1))
#define VNPU_KS_FULL_BACKENDS (((vnpu_keyset_t)1 << VNPU_NUM_BACKENDS) - 1)

/* The key set holding a runtime key's bits (an alias key's: every key it
 * covers). */
vnpu_keyset_t vnpu_keyset_of(enum vnpu_dispatch_key key);
/* The highest-priority runtime key of a set (VNPU_KEY_UNDEFINED if none). */
enum vnpu_dispatch_key vnpu_keyset_highest(vnpu_keyset_t ks);
/* Removes functionality bits only (backend bits stay), as c10's remove. */
static inline vnpu_keyset_t vnpu_keyset_remove(vnpu_keyset_t ks,
					       vnpu_keyset_t other)
{
	return ks & (VNPU_KS_FULL_BACKENDS | ~other);
}
/* Every functionality below `f` with all backends: what a kernel of
 * functionality f redispatches to (c10's FULL_AFTER). */
vnpu_keyset_t vnpu_keyset_after(enum vnpu_functionality f);
/* The key's name ("CPU", "PrivateUse1", "AutogradPrivateUse1", ...). With
 * the backend renamed, messages say "npu" for PrivateUse1. */
const char *vnpu_key_name(enum vnpu_dispatch_key key);
/* Writes "DispatchKeySet(CPU, AutogradCPU)" into buf; returns buf. */
char *vnpu_keyset_format(vnpu_keyset_t ks, char *buf, size_t size);

/* Thread-local include/exclude sets: the key set a call dispatches on is
 * ((tensor keys | included) - excluded) & the op's non-fallthrough mask.
 * BackendSelect and ADInplaceOrView are included by default. Guards save
 * the previous state; restore it with the matching _end in LIFO order. */
struct vnpu_tls_guard {
	vnpu_keyset_t saved_included;
	vnpu_keyset_t saved_excluded;
};
void vnpu_tls_include_begin(struct vnpu_tls_guard *g, vnpu_keyset_t ks);
void vnpu_tls_exclude_begin(struct vnpu_tls_guard *g, vnpu_keyset_t ks);
void vnpu_tls_guard_end(struct vnpu_tls_guard *g);
vnpu_keyset_t vnpu_tls_included(void);
vnpu_keyset_t vnpu_tls_excluded(void);
/* no_grad: excludes the autograd functionality (torch.no_grad()). */
void vnpu_no_grad_begin(struct vnpu_tls_guard *g);

/* ---- tagged values and the boxed stack ----------------------------------- */

enum vnpu_ivalue_tag {
	VNPU_IV_NONE = 0,
	VNPU_IV_TENSOR,
	VNPU_IV_TENSOR_LIST,	/* entries may be NULL (Tensor?[]) */
	VNPU_IV_INT,
	VNPU_IV_DOUBLE,
	VNPU_IV_BOOL,
	VNPU_IV_STRING,
	VNPU_IV_INT_LIST,
	VNPU_IV_DEVICE,
	VNPU_IV_BOOL_LIST,	/* .bits, and the length in .reserved */
};

struct vnpu_iv_tensor_list {	/* owns a reference to each entry */
	int64_t n;
	struct vnpu_at_tensor *v[];
};
struct vnpu_iv_int_list {
	int64_t n;
	int64_t v[];
};

/* 16 bytes: a tag and a payload; TENSOR, TENSOR_LIST, STRING and INT_LIST
 * own what they point at. */
struct vnpu_ivalue {
	uint32_t tag;		/* enum vnpu_ivalue_tag */
	uint32_t reserved;
	union {
		int64_t i;
		double d;
		bool b;
		struct vnpu_at_device dev;
		struct vnpu_at_tensor *t;
		struct vnpu_iv_tensor_list *tl;
		struct vnpu_iv_int_list *il;
		char *s;
		uint64_t bits;
	};
};

/* The boxed calling convention: the caller pushes the schema's arguments
 * in order; the kernel replaces them by the schema's returns. */
struct vnpu_stack {
	struct vnpu_ivalue *v;
	size_t size;
	size_t cap;
};

void vnpu_stack_init(struct vnpu_stack *s);
void vnpu_stack_clear(struct vnpu_stack *s);	/* drops every value */
void vnpu_stack_destroy(struct vnpu_stack *s);
/* Pushes take a new reference / copy; they return false on OOM (and set
 * the dispatch error). */
bool vnpu_stack_push(struct vnpu_stack *s, struct vnpu_ivalue v); /* moves v */
bool vnpu_stack_push_none(struct vnpu_stack *s);
bool vnpu_stack_push_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t);
bool vnpu_stack_push_tensor_list(struct vnpu_stack *s,
				 struct vnpu_at_tensor_list l);
bool vnpu_stack_push_int(struct vnpu_stack *s, int64_t v);
bool vnpu_stack_push_double(struct vnpu_stack *s, double v);
bool vnpu_stack_push_bool(struct vnpu_stack *s, bool v);
bool vnpu_stack_push_scalar(struct vnpu_stack *s, struct vnpu_at_scalar v);
bool vnpu_stack_push_string(struct vnpu_stack *s, const char *v);
bool vnpu_stack_push_int_list(struct vnpu_stack *s, struct vnpu_at_int_array a);
bool vnpu_stack_push_device(struct vnpu_stack *s, struct vnpu_at_device d);
/* false (error set) for more than VNPU_AT_BOOL_LIST_MAX elements */
bool vnpu_stack_push_bool_list(struct vnpu_stack *s, struct vnpu_at_bool_list l);
/* Removes the top value and gives it (and its ownership) to the caller. */
struct vnpu_ivalue vnpu_stack_pop(struct vnpu_stack *s);
/* Drops the top n values. */
void vnpu_stack_drop(struct vnpu_stack *s, size_t n);
/* The value `i` places below the top (0 = top). */
static inline struct vnpu_ivalue *vnpu_stack_peek(struct vnpu_stack *s,
						  size_t i)
{
	return &s->v[s->size - 1 - i];
}
void vnpu_ivalue_drop(struct vnpu_ivalue *v);	/* releases, sets NONE */
/* A new value sharing v's tensors (retained) and copying its lists. */
bool vnpu_ivalue_copy(struct vnpu_ivalue *dst, const struct vnpu_ivalue *v);
/* Scalars travel as INT, DOUBLE or BOOL values. */
struct vnpu_at_scalar vnpu_ivalue_scalar(const struct vnpu_ivalue *v);

/* ---- operators ------------------------------------------------------------ */

struct vnpu_op;		/* an operator: schema + dispatch table */
struct vnpu_schema;	/* parsed schema (vnpu_schema.h) */

/* A boxed kernel: works on the stack. Fallbacks must be boxed. */
typedef void (*vnpu_boxed_kernel_fn)(const struct vnpu_op *op,
				     vnpu_keyset_t ks, struct vnpu_stack *stack);

/* The operator named "ns::name.overload" ("aten::add.Tensor"; a missing
 * namespace means aten), or NULL. */
const struct vnpu_op *vnpu_op_find(const char *qualified_name);
const char *vnpu_op_name(const struct vnpu_op *op);	/* "aten::add.Tensor" */
const struct vnpu_schema *vnpu_op_schema(const struct vnpu_op *op);

/* def: declares an operator from its schema string ("ns::" optional).
 * Returns the operator (existing one if the same schema was defined
 * before), or NULL with the parse error (column and caret) set. */
const struct vnpu_op *vnpu_def(const char *schema);
/* impl: registers a kernel for a runtime or alias key. `unboxed` is the
 * typed function (signature vnpu_fn_<op> of vnpu_ops.h, first argument
 * the key set) or NULL; `boxed` may be NULL when unboxed is given and the
 * op has a generated boxing adapter (every op of native_functions.yaml;
 * ops def'd at run time need a boxed kernel). The newest registration for
 * a key wins; the previous one comes back when it is deregistered. */
struct vnpu_registration;
struct vnpu_registration *vnpu_impl(const char *op_name,
				    enum vnpu_dispatch_key key,
				    void *unboxed, vnpu_boxed_kernel_fn boxed);
/* A fallthrough kernel for (op, key): dispatch skips that key. */
struct vnpu_registration *vnpu_impl_fallthrough(const char *op_name,
						enum vnpu_dispatch_key key);
/* A backend fallback: serves every operator without a kernel for `key`
 * (runtime keys only; one per key). fn NULL registers a fallthrough. */
struct vnpu_registration *vnpu_fallback(enum vnpu_dispatch_key key,
					vnpu_boxed_kernel_fn fn);
/* Removes a registration and recomputes the affected tables. */
void vnpu_deregister(struct vnpu_registration *r);

/* Boxed call: extracts the key set from the stack's tensor arguments (plus
 * TLS), dispatches, leaves the returns on the stack. False on error. */
bool vnpu_call_boxed(const struct vnpu_op *op, struct vnpu_stack *stack);
/* Boxed redispatch with an explicit key set: no extraction, no TLS. */
bool vnpu_redispatch_boxed(const struct vnpu_op *op, vnpu_keyset_t ks,
			   struct vnpu_stack *stack);
/* The key set a call with these tensor keys dispatches on (TLS, mask). */
vnpu_keyset_t vnpu_op_dispatch_keyset(const struct vnpu_op *op,
				      vnpu_keyset_t tensor_keys);
/* Which kernel the op's table holds for a runtime key: "kernel",
 * "composite explicit", "composite implicit", "backend fallback",
 * "fallthrough" or "missing". */
const char *vnpu_op_table_source(const struct vnpu_op *op,
				 enum vnpu_dispatch_key key);
/* Prints the op's computed table (one line per runtime key). */
void vnpu_op_dump_table(const struct vnpu_op *op, void *file);

/* Initialises the dispatcher (defines the generated operators and
 * registers their kernels). Called by a constructor; idempotent. */
void vnpu_dispatch_init(void);

/* ---- tensors ------------------------------------------------------------- */

#define VNPU_AT_MAX_DIMS 8

/* torch_npu's NPUStorageDesc: how an NPU storage is laid out. A storage in
 * an internal format (NC1HWC0, FRACTAL_Z, FRACTAL_NZ) holds the packed
 * padded layout of a base tensor of base_sizes; views of it keep their
 * logical sizes/strides. Values of enum vnpu_format (vnpu/kernel_abi.h). */
struct vnpu_at_npu_desc {
	int32_t origin_format;	/* format the base was created in */
	int32_t npu_format;	/* format of the bytes */
	uint32_t base_ndim;
	uint32_t storage_ndim;
	int64_t base_sizes[VNPU_AT_MAX_DIMS];
	int64_t base_strides[VNPU_AT_MAX_DIMS];
	int64_t storage_sizes[VNPU_AT_MAX_DIMS + 2];
};

struct vnpu_at_storage {
	int refcount;			/* atomic */
	struct vnpu_at_device device;
	void *data;			/* host pointer, or device VA on npu */
	size_t nbytes;
	bool owns_data;
	/* npu: the stream current when it was allocated. Its block returns
	 * to the cache for reuse on that stream only, where stream order
	 * puts every later use after every earlier one (as PyTorch's caching
	 * allocator); using it on another stream needs an event. */
	void *stream;
	/* Other streams the memory is used on (record_stream): when the
	 * storage dies, its stream waits for the work queued on them so far
	 * before the block is reused. Guarded by the allocator's lock. */
	void **used_streams;
	unsigned n_used_streams;
	struct vnpu_at_npu_desc npu;	/* npu storages only */
	/* Bumped by every NPU kernel that writes the storage; a cached
	 * format-cast copy (vnpu_npu_as_format) is valid while it matches. */
	uint64_t version;
	struct vnpu_at_tensor *format_cache;
	uint64_t format_cache_version;
	/* the cache's own storage version when cached: the cast is also
	 * returned to callers (npu_format_cast), who may write it */
	uint64_t format_cache_own_version;
};

struct vnpu_autograd_meta;

struct vnpu_at_tensor {
	int refcount;			/* atomic */
	int8_t dtype;			/* enum vnpu_at_dtype */
	uint8_t ndim;
	bool is_view;			/* shares its base's storage */
	/* a Python scalar as a 0-dim tensor (c10's is_wrapped_number): it
	 * ranks below every tensor in type promotion */
	bool wrapped_number;
	vnpu_keyset_t keys;		/* backend + functionality bits */
	struct vnpu_at_storage *storage;
	int64_t offset;			/* elements */
	int64_t sizes[VNPU_AT_MAX_DIMS];
	int64_t strides[VNPU_AT_MAX_DIMS];	/* elements */
	struct vnpu_autograd_meta *autograd;	/* NULL unless tracked */
};

struct vnpu_at_tensor *vnpu_at_retain(struct vnpu_at_tensor *t);
void vnpu_at_release(struct vnpu_at_tensor *t);	/* NULL is a no-op */

/* Creation without dispatch (kernels use these; users call vnpu_op_empty_*
 * or the helpers below). Contiguous, uninitialised (npu: ND format). */
struct vnpu_at_tensor *vnpu_at_empty(uint32_t ndim, const int64_t *sizes,
				     enum vnpu_at_dtype dtype,
				     struct vnpu_at_device dev);
struct vnpu_at_tensor *vnpu_at_empty_strided(uint32_t ndim,
					     const int64_t *sizes,
					     const int64_t *strides,
					     enum vnpu_at_dtype dtype,
					     struct vnpu_at_device dev);
/* Same sizes/dtype/device as t, contiguous. */
struct vnpu_at_tensor *vnpu_at_empty_like(const struct vnpu_at_tensor *t);
/* A CPU tensor that wraps caller memory (not freed by the tensor). */
struct vnpu_at_tensor *vnpu_at_from_blob(void *data, uint32_t ndim,
					 const int64_t *sizes,
					 const int64_t *strides,
					 enum vnpu_at_dtype dtype);
/* A view sharing t's storage with new geometry (no checks beyond bounds). */
struct vnpu_at_tensor *vnpu_at_view_of(struct vnpu_at_tensor *t,
				       uint32_t ndim, const int64_t *sizes,
				       const int64_t *strides, int64_t offset);

int64_t vnpu_at_numel(const struct vnpu_at_tensor *t);
bool vnpu_at_is_contiguous(const struct vnpu_at_tensor *t);
struct vnpu_at_device vnpu_at_device_of(const struct vnpu_at_tensor *t);
bool vnpu_at_is_npu(const struct vnpu_at_tensor *t);
/* Host address of element 0 of a CPU tensor (storage data + offset). */
void *vnpu_at_data(const struct vnpu_at_tensor *t);
/* Wraps a negative dim; sets the error and returns -1 if out of range. */
int64_t vnpu_at_wrap_dim(int64_t dim, int64_t ndim);
/* "[2, 3]" */
char *vnpu_at_format_sizes(const struct vnpu_at_tensor *t, char *buf,
			   size_t size);

/* ---- autograd ------------------------------------------------------------- */

/* Marks a leaf as requiring grad (adds the autograd key to its key set). */
bool vnpu_at_set_requires_grad(struct vnpu_at_tensor *t, bool on);
bool vnpu_at_requires_grad(const struct vnpu_at_tensor *t);
/* The accumulated gradient of a leaf (borrowed; NULL if none). */
struct vnpu_at_tensor *vnpu_at_grad(const struct vnpu_at_tensor *t);
void vnpu_at_zero_grad(struct vnpu_at_tensor *t);
/* Runs the tape backwards from a scalar (one-element) loss, accumulating
 * into the leaves' .grad. False with the error set on misuse. */
bool vnpu_at_backward(struct vnpu_at_tensor *loss);
/* The autograd node name of a non-leaf ("MmBackward"), or NULL. */
const char *vnpu_at_grad_fn_name(const struct vnpu_at_tensor *t);

/* ---- CPU fallback, profiler ---------------------------------------------- */

enum vnpu_fallback_policy {
	VNPU_FALLBACK_ALLOW = 0,
	VNPU_FALLBACK_WARN,	/* warn once per operator (stderr) */
	VNPU_FALLBACK_ERROR,	/* refuse: the op fails naming itself */
};
/* Defaults to VNPU_FALLBACK=allow|warn|error from the environment (allow
 * when unset). */
void vnpu_fallback_set_policy(enum vnpu_fallback_policy p);
enum vnpu_fallback_policy vnpu_fallback_policy(void);

struct vnpu_fallback_entry {
	const char *op;		/* "aten::nll_loss_forward" */
	uint64_t count;
};
/* Copies up to max entries (most frequent first); returns how many ops
 * fell back in total (may exceed max). A call counts once the CPU kernel
 * ran; one whose CPU kernel refused the input (an NPU kernel leaves
 * invalid arguments to it for PyTorch's wording of the error) is a
 * rejected input, listed by vnpu_fallback_rejections instead. */
size_t vnpu_fallback_report(struct vnpu_fallback_entry *out, size_t max);
size_t vnpu_fallback_rejections(struct vnpu_fallback_entry *out, size_t max);
/* Prints the report ("CPU fallback: 3 ops, 17 calls" + one line each). */
void vnpu_fallback_print(void *file);
void vnpu_fallback_reset(void);
/* The boxed CPU fallback itself (registered on PrivateUse1). */
void vnpu_cpu_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
		       struct vnpu_stack *stack);

/* The profiler key: while enabled (TLS include of the Profiler key on the
 * calling thread), every op call is counted and timed. */
void vnpu_profiler_enable(bool on);
void vnpu_profiler_print(void *file);
void vnpu_profiler_reset(void);

/* ---- the npu device ------------------------------------------------------ */

/* Starts the runtime once for the process; later calls cost one check.
 * false (error set) when it cannot start. */
bool vnpu_at_npu_start(void);
/* npu:N for the calling thread (default 0); the runtime is initialised on
 * first use. */
bool vnpu_at_npu_set_device(int index);
/* The stream NPU kernels launch on for this thread (NULL = default). */
void vnpu_at_npu_set_stream(void *stream);
void *vnpu_at_npu_stream(void);
/* Waits for all work queued on the current stream. */
bool vnpu_at_npu_synchronize(void);
/* Returns every device's cached blocks to the device (the runtime's
 * cache: storages' memory is the runtime's stream-ordered memory). */
void vnpu_at_npu_empty_cache(void);

#ifdef __cplusplus
}
#endif

#include "vnpu_ops.h"	/* generated: vnpu_op_<name>_<overload>(...) */

#endif /* VNPU_DISPATCH_H */
