/* SPDX-License-Identifier: MIT */
/*
 * Helpers for writing kernels (docs/dispatcher.md, "Writing an op kernel"):
 * element loads/stores for every dtype, strided iteration with
 * broadcasting, shape and dtype rules, argument checks.
 */
#ifndef VNPU_OP_UTIL_H
#define VNPU_OP_UTIL_H

#include <math.h>
#include <string.h>

#include "vnpu_dispatch.h"
#include "vnpu_ops_kernels.h"

/* ---- elements ------------------------------------------------------------ */

float vnpu_at_f16_to_f32(uint16_t h);
uint16_t vnpu_at_f32_to_f16(float f);	/* round to nearest even */
float vnpu_at_bf16_to_f32(uint16_t h);
uint16_t vnpu_at_f32_to_bf16(float f);	/* round to nearest even */

/* Element at p of dtype as double / int64 (bool: 0/1; float to int
 * truncates toward zero); stores convert (to bool: != 0; float to int
 * saturates, NaN -> 0, as the device's CAST). */
double vnpu_at_load(enum vnpu_at_dtype dtype, const void *p);
int64_t vnpu_at_load_int(enum vnpu_at_dtype dtype, const void *p);
void vnpu_at_store(enum vnpu_at_dtype dtype, void *p, double v);
void vnpu_at_store_int(enum vnpu_at_dtype dtype, void *p, int64_t v);

/* ---- strided iteration ------------------------------------------------------ */

#define VNPU_AT_ITER_MAX 4

/*
 * Walks the index space `sizes` (ndim dims) over up to 4 tensors, each
 * broadcast to it (dims aligned right; a size-1 dim repeats). p[i] is the
 * host address of tensor i's current element. CPU tensors only.
 *
 *	struct vnpu_at_iter it;
 *	if (!vnpu_at_iter_init(&it, out->ndim, out->sizes, 3,
 *			       (const struct vnpu_at_tensor *[]){ out, a, b }))
 *		return NULL;
 *	while (vnpu_at_iter_next(&it))
 *		vnpu_at_store(out->dtype, it.p[0],
 *			      vnpu_at_load(a->dtype, it.p[1]) + ...);
 */
struct vnpu_at_iter {
	uint32_t ndim, n;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	int64_t idx[VNPU_AT_MAX_DIMS];
	int64_t bstride[VNPU_AT_ITER_MAX][VNPU_AT_MAX_DIMS];	/* bytes */
	char *base[VNPU_AT_ITER_MAX];
	char *p[VNPU_AT_ITER_MAX];
	int64_t remaining;
	bool started;
};
bool vnpu_at_iter_init(struct vnpu_at_iter *it, uint32_t ndim,
		       const int64_t *sizes, uint32_t n,
		       const struct vnpu_at_tensor *const *tensors);
bool vnpu_at_iter_next(struct vnpu_at_iter *it);

/* ---- shapes and dtypes --------------------------------------------------------- */

/* Broadcast shape of n tensors; false with PyTorch's "<op>: The size of
 * tensor a (3) must match the size of tensor b (4) at non-singleton
 * dimension 1" set. */
bool vnpu_at_broadcast_shapes(const char *op, uint32_t n,
			      const struct vnpu_at_tensor *const *ts,
			      uint32_t *ndim, int64_t *sizes);
/* PyTorch's canCast: no float into an integer dtype, nothing but bool
 * into bool. */
bool vnpu_at_can_cast(enum vnpu_at_dtype from, enum vnpu_at_dtype to);
/*
 * TensorIterator's checks, in its order, before an op writes a result of
 * dtype `result` and shape (nd, sizes) into `out` that already exists:
 * out must not be an expanded tensor, an in-place self or an out= that is
 * also an input (resizable false) must have the result's shape ("output
 * with shape [2] doesn't match the broadcast shape [3, 2]"), and the
 * dtype must cast ("result type Float can't be cast to the desired
 * output type Long").
 */
bool vnpu_at_check_write(const char *op, const struct vnpu_at_tensor *out,
			 enum vnpu_at_dtype result, uint32_t nd,
			 const int64_t *sizes, bool resizable);
/* Result dtype of a binary op, as PyTorch's result_type: dimensioned
 * tensors first, then 0-dim tensors, then wrapped numbers (Python
 * scalars; a float one counts as float32, the default dtype); a lower
 * rank only decides when it is of a higher category (bool < int < float). */
enum vnpu_at_dtype vnpu_at_result_type(const struct vnpu_at_tensor *a,
				       const struct vnpu_at_tensor *b);
/* All tensors on one device; else "<op>: expected all tensors on one
 * device, got cpu and npu:0" (0-dim CPU tensors are allowed with npu). */
bool vnpu_at_check_same_device(const char *op, uint32_t n,
			       const struct vnpu_at_tensor *const *ts);
/* Normalises a list of dims (negative allowed) into a bit mask; an empty
 * list means every dim. False with the error set on a bad/repeated dim. */
bool vnpu_at_dim_mask(const char *op, struct vnpu_at_int_array dims,
		      uint32_t ndim, uint32_t *mask);
/* Contiguous strides of sizes (elements). */
void vnpu_at_contiguous_strides(uint32_t ndim, const int64_t *sizes,
				int64_t *strides);
/*
 * The strides TensorIterator gives the result of an elementwise op over n
 * inputs broadcast to (ndim, sizes), so that results keep their inputs'
 * layout (a transpose stays transposed, channels_last stays channels_last):
 * the inputs' own layout when all have the result's shape and one layout
 * (contiguous, channels_last, or the same dense strides); otherwise the dims
 * ordered by the inputs' strides (the first input that orders two dims
 * decides, broadcast dims decide nothing, equal strides put the smaller
 * size inner) and contiguous in that order.
 */
void vnpu_at_iter_strides(uint32_t n, const struct vnpu_at_tensor *const *in,
			  uint32_t ndim, const int64_t *sizes, int64_t *strides);
/* c10's suggest_memory_format() == ChannelsLast: a 4-d tensor whose strides
 * order its dims as NHWC does (ambiguous size-1 cases count as NCHW). */
bool vnpu_at_channels_last_like(const struct vnpu_at_tensor *t);
/* Strides of (4, sizes) in channels_last order. */
void vnpu_at_channels_last_strides(const int64_t *sizes, int64_t *strides);
/* sizes product with overflow check (-1 on overflow). */
int64_t vnpu_at_shape_numel(uint32_t ndim, const int64_t *sizes);
/* A contiguous tensor with t's data (t itself, retained, when already
 * contiguous). Works on any device through copy_. */
struct vnpu_at_tensor *vnpu_at_contiguous(struct vnpu_at_tensor *t);
/* Every entry of an int32/int64 index tensor (any device: an npu one is
 * read back, which waits for its stream) is in [0, rows); else false with
 * PyTorch's IndexError. Indexing kernels check before they write. */
bool vnpu_at_indices_in_range(const char *op, struct vnpu_at_tensor *index,
			      int64_t rows);
/* The same with PyTorch's other wording (index_copy_, index_put_):
 * "<op>: <prefix>index 5 is out of bounds for dimension 0 with size 3". */
bool vnpu_at_indices_in_bounds(const char *op, const char *prefix, struct vnpu_at_tensor *index,
			       int64_t dim, int64_t size);
/* A contiguous CPU copy of t (t itself, retained, when it is one); an npu
 * tensor is read back, which waits for its stream. */
struct vnpu_at_tensor *vnpu_at_host_contiguous(struct vnpu_at_tensor *t);
/* PyTorch's name of a dtype in its messages ("Float", "Long"). */
const char *vnpu_at_scalar_type_name(enum vnpu_at_dtype dt);
/* a and b share a storage and their element ranges meet (a cheap
 * superset of PyTorch's partial and full overlap). */
/* r (owned by the caller) as a tensor of its own: r, or a clone of self
 * when r is self (a composite whose steps all did nothing); NULL stays
 * NULL. Consumes r. */
struct vnpu_at_tensor *vnpu_at_new_or_clone(struct vnpu_at_tensor *r,
					    struct vnpu_at_tensor *self);
/* False with PyTorch's "more than one element of the written-to tensor
 * refers to a single memory location" when elements of written share one
 * (a stride 0 over a dim of size > 1, and elements at all). */
bool vnpu_at_check_no_self_overlap(const char *op, const struct vnpu_at_tensor *written);
bool vnpu_at_may_overlap(const struct vnpu_at_tensor *a, const struct vnpu_at_tensor *b);
/* at::assert_no_overlap: false with PyTorch's error when `written` may
 * share memory with `input` (NULL passes). */
bool vnpu_at_check_no_overlap(const char *op, const struct vnpu_at_tensor *written,
			      const struct vnpu_at_tensor *input);
/*
 * The checks of index_add_ (copy false) and index_copy_ (copy true), in
 * PyTorch's order and words, both backends: index a vector of int64 (and
 * int32 for index_add_), source of self's dtype with self's slice shape
 * and one row per index, an integral alpha for integer tensors, self not
 * overlapping itself, the index or the source, then every index in range
 * (read back from the device: nothing is written before). *dim_out gets
 * dim wrapped. False with the error set.
 */
bool vnpu_at_index_scatter_check(const char *op, bool copy, const struct vnpu_at_tensor *self,
				 int64_t dim, const struct vnpu_at_tensor *index,
				 const struct vnpu_at_tensor *source, struct vnpu_at_scalar alpha,
				 int64_t *dim_out);
/* "[3, 4]" of n sizes into buf; returns buf. */
const char *vnpu_at_format_dims(const int64_t *sizes, uint32_t n, char *buf, size_t len);
/* t as a 1-d view when it is 0-dim (indexing takes a scalar as a
 * one-element vector), else t; retained either way. */
struct vnpu_at_tensor *vnpu_at_as_vector(struct vnpu_at_tensor *t);
/* Consumes t; returns it converted to dtype on its device (t itself when
 * it has it; NULL passes through). */
struct vnpu_at_tensor *vnpu_at_converted(struct vnpu_at_tensor *t,
					 enum vnpu_at_dtype dtype);
/* A new tensor shaped sizes, of dtype, on dev (via empty dispatch). */
struct vnpu_at_tensor *vnpu_at_new(uint32_t ndim, const int64_t *sizes,
				   enum vnpu_at_dtype dtype,
				   struct vnpu_at_device dev);
/* A 0-dim tensor holding s, of dtype, on dev. */
/*
 * arange's length and terms in dtype dt, with PyTorch 2.13's checks in
 * their order: the bounds in double (step nonzero, a finite range, the
 * step's sign), the length from the doubles (for int64 from the bounds
 * truncated to int64, in int64, where step must not truncate to 0), the
 * terms in dt's accumulation type (int64 for the integers; f32 for
 * f16/bf16; double otherwise). Element i is start + i * step in that type
 * (the device's RANGE).
 */
struct vnpu_at_arange {
	int64_t n;
	double start, step;	/* float dtypes (f16/bf16: f32 values) */
	int64_t istart, istep;	/* integer dtypes */
};
bool vnpu_at_arange_plan(const char *op, struct vnpu_at_scalar start,
			 struct vnpu_at_scalar end, struct vnpu_at_scalar step,
			 enum vnpu_at_dtype dt, struct vnpu_at_arange *a);
/*
 * linspace's points in dtype dt (steps >= 2), as PyTorch's CPU kernel
 * computes them: start and end converted to dt (checked: c10's overflow
 * error; integers truncated and wrapped to the width), step = (end -
 * start) / (steps - 1) in dt's own arithmetic (double for the integers),
 * point i from start for i < steps / 2 and from end after. False with
 * PyTorch's error for bool and a bound dt cannot hold.
 */
struct vnpu_at_linspace {
	enum vnpu_at_dtype dt;
	int64_t steps;
	double start, end, step;	/* values of dt (integers: exact) */
};
bool vnpu_at_linspace_plan(const char *op, struct vnpu_at_scalar start,
			   struct vnpu_at_scalar end, int64_t steps,
			   enum vnpu_at_dtype dt, struct vnpu_at_linspace *l);
/* linspace.out's steps before its points, as PyTorch's linspace_out:
 * steps checked, out resized to steps elements when its numel differs
 * (its shape kept otherwise), a single point filled with start, the plan
 * made, out checked writable. 1 when the plan's points remain to be
 * written in out's row-major order, 0 when out is complete, -1 with the
 * error set. */
int vnpu_at_linspace_prepare(const char *op, struct vnpu_at_scalar start,
			     struct vnpu_at_scalar end, int64_t steps,
			     struct vnpu_at_tensor *out, struct vnpu_at_linspace *l);
/* Point i of the plan, a value of its dtype. */
double vnpu_at_linspace_point(const struct vnpu_at_linspace *l, int64_t i);
/* Whether no bound of the range is a float: an integer range with a float
 * bound is where PyTorch's versions differ. */
bool vnpu_at_arange_integral(struct vnpu_at_scalar start, struct vnpu_at_scalar end,
			     struct vnpu_at_scalar step);

/*
 * A 2-d list argument of convolution or pooling (kernel_size, stride,
 * padding, dilation) as two values: one value repeats, two are as given,
 * an empty list takes dflt (NULL: an empty list is refused). Anything
 * else sets PyTorch's "must either be a single int, or a tuple of two
 * ints" and returns false. Each op checks the values' range itself.
 */
bool vnpu_at_pair_arg(const char *op, const char *what, struct vnpu_at_int_array a,
		      const int64_t *dflt, int64_t out[2]);
/*
 * The geometry of a 2-d pooling of self (3-D, or 4-D with a batch dim):
 * PyTorch's pool2d_shape_check and pooling_output_shape, with its errors
 * in its words under op's name (is_max: max pooling's dtypes, else avg
 * pooling's), and a refusal of sizes whose window arithmetic would leave
 * int64 (PyTorch wraps). Sets the error and returns false; both backends'
 * kernels take their geometry from here.
 */
struct vnpu_at_pool2d {
	int64_t k[2], s[2], p[2], d[2];	/* kernel, stride, padding, dilation */
	int64_t N, C, H, W, HO, WO;
	bool batched;
};

bool vnpu_at_pool2d_setup(const char *op, const struct vnpu_at_tensor *self,
			  struct vnpu_at_int_array kernel_size,
			  struct vnpu_at_int_array stride,
			  struct vnpu_at_int_array padding,
			  struct vnpu_at_int_array dilation, bool ceil_mode,
			  bool is_max, struct vnpu_at_pool2d *g);
/*
 * gather's argument checks, as PyTorch's gather_shape_check: index of
 * self's rank (0-dim counts as 1) and no larger than self but along dim d
 * (wrapped); an int64 or int32 index. Sets the error and returns false.
 */
bool vnpu_at_gather_check(const char *op, const struct vnpu_at_tensor *self, int64_t d,
			  const struct vnpu_at_tensor *index);
/* scatter and scatter_add's argument checks, as PyTorch's
 * scatter_shape_check: src (NULL for a value) of self's dtype; unless index
 * is empty, an int64 or int32 index of self's rank, no larger than src and
 * than self but along dim d. */
bool vnpu_at_scatter_check(const char *op, const struct vnpu_at_tensor *self, int64_t d,
			   const struct vnpu_at_tensor *index, const struct vnpu_at_tensor *src);
/*
 * The positions gather reads (scatter writes) in a row-major copy of a
 * tensor of self_sizes: for each element p of index, p with dim d taken
 * from index[p], as a row-major offset. Computed on index's device
 * (aranges, a multiply and adds); an int64 tensor of index's shape.
 */
struct vnpu_at_tensor *vnpu_at_gather_positions(uint32_t ndim, const int64_t *self_sizes,
						uint32_t d, struct vnpu_at_tensor *index);

struct vnpu_at_tensor *vnpu_at_scalar_tensor(struct vnpu_at_scalar s,
					     enum vnpu_at_dtype dtype,
					     struct vnpu_at_device dev);

/* PyTorch's checks of baddbmm (summed false) and addbmm (true), in its
 * words: batch1 [B, M, K] and batch2 [B, K, N] of self's dtype (not
 * bool); self expands to the result, [B, M, N] or (summed over the
 * batch) [M, N]. False with the error set. */
bool vnpu_batch_matmul_check(const char *op, bool summed,
			     const struct vnpu_at_tensor *self,
			     const struct vnpu_at_tensor *batch1,
			     const struct vnpu_at_tensor *batch2);

/*
 * The int8 matrix multiply of npu::npu_int8_matmul (a [M, K] @ b [K, N])
 * and npu::npu_quantized_linear (input [..., K] @ weight [N, K]^T), as
 * both backends read it. Quantisation is per tensor, affine: real =
 * scale * (q - zero_point).
 */
struct vnpu_qmm {
	int64_t m, k, n;
	int32_t za, zb;	   /* zero points of a (u8) and b (s8) */
	bool linear;	   /* b is [N, K]; u8 output */
	float scale;	   /* linear: a's scale * b's scale */
	float out_scale;   /* linear */
	int32_t out_zp;	   /* linear */
};
/* Checks dtypes (a uint8, b int8, bias float32 [N]), shapes, zero points
 * (a 0..255, b -128..127, out 0..255), scales (finite, > 0) and K (at
 * most the device's 32768, so that no sum overflows int32); fills q.
 * False with the error set. */
bool vnpu_qmm_check(const char *op, struct vnpu_qmm *q,
		    const struct vnpu_at_tensor *a,
		    const struct vnpu_at_tensor *b,
		    const struct vnpu_at_tensor *bias, int64_t za, int64_t zb,
		    bool linear, double a_scale, double b_scale,
		    double out_scale, int64_t out_zp);

#endif /* VNPU_OP_UTIL_H */
