/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: kernel argument blocks, tensor descriptors and the parameters
 * of every kernel the device executes.
 *
 * KERNEL_LAUNCH points at an argument block in the context's address space:
 *
 *   struct vnpu_kargs_header                 16 bytes
 *   struct vnpu_kargs_buffer[num_buffers]    24 bytes each
 *   params                                   params_size bytes, the kernel's
 *                                            struct vnpu_kp_* below
 *
 * args_size must equal the sum exactly. The device maps every buffer (whole
 * range, with READ and/or WRITE permission as its access says) before the
 * kernel starts, then checks each tensor descriptor of the params against the
 * buffer it names. A kernel starts only after all checks passed, so a
 * malformed launch never touches memory.
 *
 * Tensors: `sizes` is the logical shape. For plain formats (ND, NCHW, NHWC)
 * element i0..in-1 lives at offset + sum(ik * strides[k]) elements from the
 * start of the buffer; strides are >= 0 and may be 0 (broadcast). For the
 * internal formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ) the buffer holds the
 * packed storage described in docs/hw-spec.md starting at `offset`, strides
 * must be all zero, and padding elements read as zero.
 */
#ifndef VNPU_KERNEL_ABI_H
#define VNPU_KERNEL_ABI_H

#include "hw_types.h"
#ifndef __KERNEL__
#include <stdbool.h>
#include <string.h>
#endif

#define VNPU_MAX_DIMS		8
#define VNPU_KARGS_MAX_BUFFERS	8

/* Element types; numbering follows ACL's aclDataType. F64 is a dtype of the
 * vector kernels only (FILL, CAST, UNARY, BINARY, WHERE, REDUCE, INDEX,
 * plain-to-plain TRANSDATA); GEMM, CONV2D, QGEMM, POOL2D, SOFTMAX and
 * LAYER_NORM return UNSUPPORTED for it, as for any dtype they lack. */
enum vnpu_dtype {
	VNPU_DTYPE_F32 = 0,
	VNPU_DTYPE_F16 = 1,
	VNPU_DTYPE_I8 = 2,
	VNPU_DTYPE_I32 = 3,
	VNPU_DTYPE_U8 = 4,
	VNPU_DTYPE_I16 = 6,
	VNPU_DTYPE_I64 = 9,
	VNPU_DTYPE_F64 = 11,	/* computed in double on the vector unit */
	VNPU_DTYPE_BOOL = 12,	/* one byte, 0 or 1 */
	VNPU_DTYPE_BF16 = 27,
};

/* Memory formats; numbering follows ACL's aclFormat. */
enum vnpu_format {
	VNPU_FORMAT_NCHW = 0,
	VNPU_FORMAT_NHWC = 1,
	VNPU_FORMAT_ND = 2,
	VNPU_FORMAT_NC1HWC0 = 3,
	VNPU_FORMAT_FRACTAL_Z = 4,
	VNPU_FORMAT_FRACTAL_NZ = 29,
};

/* Fractal geometry (docs/hw-spec.md, "Memory formats"). */
#define VNPU_CUBE_M0		16	/* rows of a fractal / Ni of FRACTAL_Z */
#define VNPU_C0(itemsize)	((itemsize) == 1 ? 32 : 16)

enum vnpu_kargs_access {
	VNPU_ACCESS_READ = 1u << 0,
	VNPU_ACCESS_WRITE = 1u << 1,
};

struct vnpu_kargs_header {
	uint32_t num_buffers;	/* 0 .. VNPU_KARGS_MAX_BUFFERS */
	uint32_t params_size;	/* must equal the kernel's params size */
	uint64_t reserved;	/* must be zero */
};

struct vnpu_kargs_buffer {
	uint64_t va;		/* device VA, any alignment */
	uint64_t size;		/* bytes, >= 1 */
	uint32_t access;	/* VNPU_ACCESS_*, not zero */
	uint32_t reserved;	/* must be zero */
};

struct vnpu_tensor {
	uint32_t buffer;	/* index into the launch's buffers */
	uint32_t dtype;		/* enum vnpu_dtype */
	uint32_t format;	/* enum vnpu_format */
	uint32_t ndim;		/* 0 .. VNPU_MAX_DIMS */
	int64_t offset;		/* elements from the buffer start, >= 0 */
	int64_t sizes[VNPU_MAX_DIMS];	/* >= 0; entries past ndim zero */
	int64_t strides[VNPU_MAX_DIMS];	/* elements, >= 0; past ndim zero */
};

enum vnpu_kernel_id {
	VNPU_KERNEL_FILL = 1,
	VNPU_KERNEL_CAST = 2,
	VNPU_KERNEL_UNARY = 3,
	VNPU_KERNEL_BINARY = 4,
	VNPU_KERNEL_WHERE = 5,
	VNPU_KERNEL_GEMM = 6,
	VNPU_KERNEL_CONV2D = 7,
	VNPU_KERNEL_POOL2D = 8,
	VNPU_KERNEL_SOFTMAX = 9,
	VNPU_KERNEL_LAYER_NORM = 10,
	VNPU_KERNEL_REDUCE = 11,
	VNPU_KERNEL_TRANSDATA = 12,
	VNPU_KERNEL_QGEMM = 13,
	VNPU_KERNEL_INDEX = 14,
	VNPU_KERNEL_RANGE = 15,
	VNPU_KERNEL_SCAN = 16,
	VNPU_KERNEL_SORT = 17,
	VNPU_KERNEL_ID_MAX = 17,
};

/* Fused activation of GEMM and CONV2D. */
enum vnpu_activation {
	VNPU_ACT_NONE = 0,
	VNPU_ACT_RELU = 1,
	VNPU_ACT_GELU = 2,	/* erf form */
	VNPU_ACT_SILU = 3,
	VNPU_ACT_SIGMOID = 4,
	VNPU_ACT_TANH = 5,
};

/* FILL: out[...] = value, converted to out's dtype (F64 stores it exactly,
 * F32/F16/BF16 round it to nearest even). */
struct vnpu_kp_fill {
	struct vnpu_tensor out;
	double value;		/* used for float dtypes */
	int64_t ivalue;		/* used for integer and bool dtypes */
};

/* RANGE: out's elements in row-major order of its shape, i = 0 .. n-1 (n =
 * out's numel), each computed on its own by PyTorch's per-element formula
 * (its CUDA kernels' and its CPU scalar loop's; the CPU's vector loop can
 * differ from it by an ulp).
 * mode ARANGE: start + i * step (PyTorch's arange): for F32 and F64 in
 * double, for F16 and BF16 in f32 (start and step rounded to f32 first),
 * then rounded once to nearest even; for the integer dtypes istart + i *
 * istep in int64, wrapping to the width.
 * mode LINSPACE: n points from start to end (PyTorch's linspace): with
 * step = (end - start) / (n - 1), start + step * i for i < n / 2 and
 * end - step * (n - 1 - i) after, so both ends are exact; n == 1 is start.
 * Float dtypes compute in the dtype itself, every operation rounded to it
 * (start and end rounded first); for the integer dtypes start and end are
 * integers of the dtype, step is a double and each point is truncated
 * toward zero.
 * BOOL is UNSUPPORTED; reserved must be zero. */
enum vnpu_range_mode {
	VNPU_RANGE_ARANGE = 0,
	VNPU_RANGE_LINSPACE = 1,
};

struct vnpu_kp_range {
	struct vnpu_tensor out;
	double start, step;		/* ARANGE: float dtypes */
	int64_t istart, istep;		/* ARANGE: integer dtypes */
	uint32_t mode;			/* enum vnpu_range_mode */
	uint32_t reserved;
	double end;			/* LINSPACE (and start): every dtype */
};

/* CAST: out = (dtype of out) src, element by element; same shape. With equal
 * dtypes this is a strided copy. Float to integer truncates toward zero and
 * saturates; NaN becomes 0; to BOOL is (x != 0). Any pair with F64 converts
 * through double: to F64 exactly (I64 rounded to nearest even), from F64 to
 * F32, F16 and BF16 rounded once to nearest even from the double value. */
struct vnpu_kp_cast {
	struct vnpu_tensor src;
	struct vnpu_tensor out;
};

enum vnpu_unary_op {
	VNPU_UNARY_ABS = 0,
	VNPU_UNARY_NEG = 1,
	VNPU_UNARY_EXP = 2,
	VNPU_UNARY_LOG = 3,
	VNPU_UNARY_SQRT = 4,
	VNPU_UNARY_RSQRT = 5,
	VNPU_UNARY_RELU = 6,
	VNPU_UNARY_GELU = 7,	/* erf form */
	VNPU_UNARY_SILU = 8,
	VNPU_UNARY_SIGMOID = 9,
	VNPU_UNARY_TANH = 10,
	VNPU_UNARY_BITWISE_NOT = 11,	/* integers ~x, BOOL !x; no floats */
	VNPU_UNARY_FLOOR = 12,	/* integers: identity */
	VNPU_UNARY_CEIL = 13,	/* integers: identity */
	VNPU_UNARY_TRUNC = 14,	/* integers: identity */
	VNPU_UNARY_ROUND = 15,	/* half to even; integers: identity */
	VNPU_UNARY_SIGN = 16,	/* -1, 0 or 1; floats: NaN and -0.0 give +0.0;
				 * BOOL: identity */
	VNPU_UNARY_RECIPROCAL = 17,	/* 1 / x */
	VNPU_UNARY_SIN = 18,	/* SIN .. ERFC: the C library's function */
	VNPU_UNARY_COS = 19,
	VNPU_UNARY_TAN = 20,
	VNPU_UNARY_ASIN = 21,
	VNPU_UNARY_ACOS = 22,
	VNPU_UNARY_ATAN = 23,
	VNPU_UNARY_SINH = 24,
	VNPU_UNARY_COSH = 25,
	VNPU_UNARY_ASINH = 26,
	VNPU_UNARY_ACOSH = 27,
	VNPU_UNARY_ATANH = 28,
	VNPU_UNARY_LOG2 = 29,
	VNPU_UNARY_LOG10 = 30,
	VNPU_UNARY_LOG1P = 31,
	VNPU_UNARY_EXPM1 = 32,
	VNPU_UNARY_EXP2 = 33,
	VNPU_UNARY_ERF = 34,
	VNPU_UNARY_ERFC = 35,
	/* as PyTorch's CPU kernels: min(max(x + 3, 0), 6) / 6, and x times
	 * that clamp, then / 6; NaN passes through */
	VNPU_UNARY_HARDSIGMOID = 36,
	VNPU_UNARY_HARDSWISH = 37,
	VNPU_UNARY_COUNT
};

/* UNARY: out = op(src); same shape and dtype. Every op but BITWISE_NOT
 * takes F32, F16 and BF16 (computed in f32, rounded once to the dtype) and
 * F64 (computed in double). ABS, NEG, RELU, FLOOR, CEIL, TRUNC, ROUND and
 * SIGN also take I8, U8, I16, I32 and I64 (wrapping: -INT_MIN is INT_MIN),
 * BITWISE_NOT only those and BOOL, SIGN BOOL as well; any other pair is
 * UNSUPPORTED. The rounding ops and SIGN are exact, as PyTorch's; the
 * transcendental ones are the C library's (glibc: within an ulp or so;
 * PyTorch's CPU computes its vectorised runs with SLEEF's u10 functions,
 * its scalar tails with the C library). */
struct vnpu_kp_unary {
	uint32_t op;		/* enum vnpu_unary_op */
	uint32_t reserved;
	struct vnpu_tensor src;
	struct vnpu_tensor out;
};

enum vnpu_binary_op {
	VNPU_BINARY_ADD = 0,	/* a + alpha * b */
	VNPU_BINARY_SUB = 1,	/* a - alpha * b */
	VNPU_BINARY_MUL = 2,
	VNPU_BINARY_DIV = 3,	/* true division; integers: toward zero, x/0 = 0 */
	VNPU_BINARY_MAXIMUM = 4,
	VNPU_BINARY_MINIMUM = 5,
	VNPU_BINARY_EQ = 6,	/* comparisons write BOOL */
	VNPU_BINARY_NE = 7,
	VNPU_BINARY_LT = 8,
	VNPU_BINARY_LE = 9,
	VNPU_BINARY_GT = 10,
	VNPU_BINARY_GE = 11,
	VNPU_BINARY_GELU_BACKWARD = 12, /* a * GELU'(b), erf form; floats only */
	VNPU_BINARY_BITWISE_AND = 13,	/* integers and BOOL only */
	VNPU_BINARY_BITWISE_OR = 14,
	VNPU_BINARY_BITWISE_XOR = 15,
	/* Floats: pow(a, b) of the C library. Integers (no BOOL): exact
	 * a^b wrapping to the width, 0^0 = 1; for b < 0 (PyTorch's CPU
	 * integer pow): 1 if a == 1, (-1)^b if a == -1, else 0. */
	VNPU_BINARY_POW = 16,
	VNPU_BINARY_ATAN2 = 17,		/* atan2(a, b); floats only */
	VNPU_BINARY_COPYSIGN = 18,	/* |a| with b's sign bit; floats only */
	/* FMOD, REMAINDER, FLOOR_DIVIDE: floats and integers (no BOOL). An
	 * integer zero divisor gives 0 (PyTorch raises ZeroDivisionError;
	 * its front end checks before launching). */
	VNPU_BINARY_FMOD = 19,		/* C fmod: sign of a; integers a % b
					 * truncated, x % -1 = 0 */
	/* Sign of b: m = fmod(a, b), m + b when m != 0 and the signs of m
	 * and b differ (so a zero result keeps a's sign, and -5 rem inf is
	 * inf); integers the floor modulo. */
	VNPU_BINARY_REMAINDER = 20,
	/* floor(a / b) as PyTorch's div_floor_floating: b == 0 gives a / b;
	 * else m = fmod(a, b), d = (a - m) / b, d -= 1 when m != 0 and the
	 * signs of m and b differ; then f = floor(d), plus 1 when
	 * d - f > 0.5, or copysign(0, a / b) when d == 0 (fmod is exact,
	 * so the vectorised form's fixup for SLEEF's fmod changes nothing).
	 * F16 and BF16 round every step to their dtype, as PyTorch's
	 * vectorised half arithmetic does. Integers: the floor quotient,
	 * INT_MIN / -1 wrapping to INT_MIN. */
	VNPU_BINARY_FLOOR_DIVIDE = 21,
	/* Shifts (integers only, in the dtype's width w): a << b, wrapping,
	 * and a >> b arithmetic (U8 logical); for b < 0 or b >= w the left
	 * shift gives 0 and the right one -1 for negative a, else 0. */
	VNPU_BINARY_BITWISE_LEFT_SHIFT = 22,
	VNPU_BINARY_BITWISE_RIGHT_SHIFT = 23,
	/* Integers only: Euclid's algorithm on |a| and |b| in the width, as
	 * PyTorch: gcd(0, 0) = 0 and the result is >= 0 except where |INT_MIN|
	 * wraps: gcd(INT_MIN, 0) = INT_MIN, gcd(INT_MIN, 6) = -2. */
	VNPU_BINARY_GCD = 24,
	/* Floats only: a if a == b is infinite, else
	 * max(a, b) + log1p(exp(-|a - b|)). */
	VNPU_BINARY_LOGADDEXP = 25,
	/* Floats only: NaN if b is NaN, else 0 if a == 0 (+0.0), else
	 * a * log(b); F16 and BF16 round log(b) to their dtype before the
	 * product, as PyTorch's Half and BFloat16 log. */
	VNPU_BINARY_XLOGY = 26,
	VNPU_BINARY_HYPOT = 27,		/* hypot(a, b); floats only */
	/* Floats only: the next value after a toward b in a's dtype (F16
	 * and BF16 step in their own 16-bit representation); b if a == b,
	 * NaN if either is NaN. */
	VNPU_BINARY_NEXTAFTER = 28,
	/* Floats only, a the gradient and b the input, as PyTorch's CPU
	 * kernels: a * (1.0f / 6.0f) where -3 < b < 3, else 0; and 0 where
	 * b <= -3, a where b >= 3, else a * (b / 3 + 0.5) (NaN b: NaN, as
	 * PyTorch's vectorised CPU kernel). */
	VNPU_BINARY_HARDSIGMOID_BACKWARD = 29,
	VNPU_BINARY_HARDSWISH_BACKWARD = 30,
	VNPU_BINARY_COUNT
};

/* BINARY: out = op(a, b) with broadcasting: a and b have out's ndim and each
 * size equals out's or is 1 (stride ignored then). a and b share a dtype;
 * out has it too, or BOOL for comparisons. F32, F16 and BF16 compute in f32
 * (alpha rounded to f32) and round the result once to the dtype (but F16
 * and BF16 FLOOR_DIVIDE and XLOGY, see there), F64 in
 * double (alpha as given); I8, U8, I16, I32, I64 and BOOL (as 0 and 1; a
 * nonzero result stores 1) in int64, wrapping to the dtype's width. A dtype
 * an op does not take (see the ops) gives UNSUPPORTED. Transcendental ops
 * are the C library's functions (PyTorch's CPU uses them for scalar tails,
 * SLEEF for vectorised runs, which may differ by an ulp). */
struct vnpu_kp_binary {
	uint32_t op;		/* enum vnpu_binary_op */
	uint32_t reserved;
	double alpha;		/* ADD/SUB only; integer dtypes need an integral alpha */
	struct vnpu_tensor a;
	struct vnpu_tensor b;
	struct vnpu_tensor out;
};

/* WHERE: out = cond ? a : b, broadcasting as BINARY; cond is BOOL. */
struct vnpu_kp_where {
	struct vnpu_tensor cond;
	struct vnpu_tensor a;
	struct vnpu_tensor b;
	struct vnpu_tensor out;
};

/* GEMM: out[b] = act(alpha * op(a[b]) op(b[b]) + beta * out[b] + bias).
 * op(x) transposes when trans_x is set. a is [B,M,K] ([B,K,M] transposed),
 * b is [B,K,N] ([B,N,K] transposed), out and bias [B,M,N] and [N]; the batch
 * dim may be omitted (ndim 2) and a or b may have batch 1 (broadcast).
 * Operands are ND or FRACTAL_NZ (a, b, out independently); dtypes F32, F16 or
 * BF16 for all of a, b, out, bias alike; accumulation is f32. beta == 0 does
 * not read out. */
struct vnpu_kp_gemm {
	uint32_t trans_a;
	uint32_t trans_b;
	uint32_t activation;	/* enum vnpu_activation */
	uint32_t has_bias;
	float alpha;
	float beta;
	struct vnpu_tensor a;
	struct vnpu_tensor b;
	struct vnpu_tensor out;
	struct vnpu_tensor bias;
};

enum vnpu_index_op {
	VNPU_INDEX_SELECT = 0,
	VNPU_INDEX_ADD = 1,
	VNPU_INDEX_NONZERO = 2,
	VNPU_INDEX_COPY = 3,
	VNPU_INDEX_COUNT
};

/* INDEX: rows of one dim picked by a list of indices. index is a rank-1
 * I32 or I64 tensor of n entries; src and out have the same rank, sizes
 * equal but along `dim`, and one dtype:
 *   SELECT  out[.., i, ..] = src[.., index[i], ..]  (out has n along dim;
 *           any dtype, copied bytewise; an entry outside [0, size) gives
 *           zero bytes)
 *   ADD     out[.., index[i], ..] += alpha * src[.., i, ..]  (src has n
 *           along dim; in index order; F32, F16, BF16 computed in f32 and
 *           rounded after each add, F64 in double; I8, U8, I16, I32, I64
 *           in int64 wrapping to the width, BOOL as 0/1 storing a nonzero
 *           sum as 1, both with an integral alpha; an entry outside
 *           [0, size) or equal to skip adds nothing)
 *   COPY    out[.., index[i], ..] = src[.., i, ..]  (src has n along dim;
 *           any dtype, copied bytewise in index order, so of repeated
 *           entries the last row stays; an entry outside [0, size) or
 *           equal to skip copies nothing)
 *   NONZERO src rank 1 of n entries, any dtype; out rank 1 I64 of n + 1:
 *           out[0] = the count c of nonzero entries (a float NaN is
 *           nonzero, -0.0 zero), out[1..c] their positions in order, the
 *           rest unwritten; dim 0, index unused (zeroed)
 * The host checks the indices beforehand (PyTorch's IndexError); the
 * device never reads or writes outside the tensors either way. */
struct vnpu_kp_index {
	uint32_t op;		/* enum vnpu_index_op */
	uint32_t dim;
	double alpha;		/* ADD */
	int64_t skip;		/* ADD, COPY: entries equal to it do nothing
				 * (embedding's padding_idx); -1 none */
	struct vnpu_tensor src;
	struct vnpu_tensor index;
	struct vnpu_tensor out;
};

/* QGEMM: int8 matrix multiply with exact int32 accumulation, the engine of
 * quantized linear layers. a U8 [M, K] ([K, M] with trans_a), b I8 [K, N]
 * ([N, K] with trans_b), both ND rank 2, K <= VNPU_QGEMM_MAX_K (so that no
 * sum can overflow int32). With
 *   acc[i][j] = sum_k (a[i][k] - a_zero_point) * (b[k][j] - b_zero_point)
 * out (ND rank 2 [M, N]) is, by its dtype:
 *   I32  acc (bias, activation and the scales unused, must be 0/NONE);
 *   F32  act(scale * acc + bias[j]);
 *   U8   clamp(round_half_even(act(scale * acc + bias[j]) / out_scale)
 *              + out_zero_point, 0, 255)   (quantized linear).
 * scale is the product of a's and b's quantisation scales; bias F32 ND [N];
 * activation NONE or RELU. */
#define VNPU_QGEMM_MAX_K 32768
struct vnpu_kp_qgemm {
	uint32_t trans_a;
	uint32_t trans_b;
	int32_t a_zero_point;	/* 0..255 */
	int32_t b_zero_point;	/* -128..127 */
	float scale;		/* F32 and U8 outputs: finite */
	float out_scale;	/* U8 output: finite, > 0 */
	int32_t out_zero_point;	/* U8 output: 0..255 */
	uint32_t has_bias;
	uint32_t activation;	/* VNPU_ACT_NONE or VNPU_ACT_RELU */
	uint32_t reserved;	/* 0 */
	struct vnpu_tensor a;
	struct vnpu_tensor b;
	struct vnpu_tensor out;
	struct vnpu_tensor bias;
};

/* CONV2D: input NC1HWC0 (logical [N,C,H,W]), weight FRACTAL_Z (logical
 * [Cout, C/groups, KH, KW]), out NC1HWC0 (logical [N,Cout,HO,WO]),
 * HO = (H + 2*pad_h - dil_h*(KH-1) - 1) / stride_h + 1, likewise WO. Optional
 * bias ND [Cout]. F32, F16, BF16 alike; f32 accumulation. */
struct vnpu_kp_conv2d {
	uint32_t stride_h, stride_w;	/* >= 1 */
	uint32_t pad_h, pad_w;
	uint32_t dil_h, dil_w;		/* >= 1 */
	uint32_t groups;		/* >= 1, divides C and Cout */
	uint32_t has_bias;
	uint32_t activation;		/* enum vnpu_activation */
	uint32_t reserved;
	struct vnpu_tensor input;
	struct vnpu_tensor weight;
	struct vnpu_tensor bias;
	struct vnpu_tensor out;
};

enum vnpu_pool_mode {
	VNPU_POOL_MAX = 0,
	VNPU_POOL_AVG = 1,
};

/* POOL2D over plain [N,C,H,W] tensors (any strides). Output size as
 * PyTorch: floor or (ceil_mode) ceil of (H + 2p - d(k-1) - 1)/s + 1, where a
 * last window starting in the right padding is dropped. AVG divides by the
 * window clipped to the padded input (count_include_pad) or to the input.
 * Max may also write the flat h*W+w argmax index (I64) into indices. */
struct vnpu_kp_pool2d {
	uint32_t mode;			/* enum vnpu_pool_mode */
	uint32_t kernel_h, kernel_w;	/* >= 1 */
	uint32_t stride_h, stride_w;	/* >= 1 */
	uint32_t pad_h, pad_w;		/* <= kernel / 2 */
	uint32_t dil_h, dil_w;		/* >= 1, max only (avg needs 1) */
	uint32_t ceil_mode;
	uint32_t count_include_pad;
	uint32_t has_indices;
	struct vnpu_tensor input;
	struct vnpu_tensor out;
	struct vnpu_tensor indices;
};

/* SOFTMAX (or LOG_SOFTMAX when log is set) along dim; same shape. */
struct vnpu_kp_softmax {
	uint32_t dim;
	uint32_t log;
	struct vnpu_tensor input;
	struct vnpu_tensor out;
};

/* LAYER_NORM over the last norm_ndim dims of input. mean and rstd are F32
 * with input's leading dims (shape [rows] flattened as their own sizes). */
struct vnpu_kp_layer_norm {
	uint32_t norm_ndim;	/* 1 .. input.ndim */
	uint32_t has_weight;
	uint32_t has_bias;
	uint32_t has_stats;	/* write mean and rstd */
	double eps;
	struct vnpu_tensor input;
	struct vnpu_tensor weight;
	struct vnpu_tensor bias;
	struct vnpu_tensor out;
	struct vnpu_tensor mean;
	struct vnpu_tensor rstd;
};

enum vnpu_reduce_op {
	VNPU_REDUCE_SUM = 0,
	VNPU_REDUCE_MEAN = 1,
	VNPU_REDUCE_MAX = 2,
	VNPU_REDUCE_MIN = 3,
	VNPU_REDUCE_ARGMAX = 4,	/* one dim; out I64, first maximum wins */
	VNPU_REDUCE_ARGMIN = 5,
	VNPU_REDUCE_PROD = 6,	/* product; an empty reduction gives 1 */
	VNPU_REDUCE_COUNT
};

/* REDUCE over the dims set in dim_mask: out has input's ndim with reduced
 * dims of size 1; out's dtype is input's (I64 for the ARG ops: a caller
 * wanting PyTorch's int64 sum or prod of a narrower integer casts to I64
 * first). Float sums accumulate in f32 (f64 for F32 and F64 input);
 * integer dtypes and BOOL (not MEAN) in int64, wrapping to their width.
 * PROD multiplies in row-major order of the reduced dims, one element
 * after the other, as PyTorch's CPU does for a strided reduction: F32 in
 * f32, F16 and BF16 rounded to their dtype after every product (PyTorch's
 * accumulation in the half type), F64 in double, integers and BOOL in
 * wrapping int64. PyTorch's contiguous reductions use vector lanes, whose
 * different order can change the last bits of a float product. */
struct vnpu_kp_reduce {
	uint32_t op;		/* enum vnpu_reduce_op */
	uint32_t dim_mask;	/* bit k reduces dim k */
	struct vnpu_tensor input;
	struct vnpu_tensor out;
};

enum vnpu_scan_op {
	VNPU_SCAN_SUM = 0,	/* cumsum */
	VNPU_SCAN_PROD = 1,	/* cumprod */
	VNPU_SCAN_COUNT
};

/* SCAN: inclusive prefix along dim; input and out of one dtype and shape.
 * out[.., i, ..] = input[.., 0, ..] op ... op input[.., i, ..], folded in
 * index order in PyTorch's CPU accumulation type (double for F32 and F64,
 * f32 for F16 and BF16, wrapping int64 for the integers) and rounded to
 * the dtype at each store. BOOL is UNSUPPORTED (PyTorch scans it as
 * int64); reserved must be zero. out may be input itself (each line reads
 * an element before it writes it), not another overlapping tensor. */
struct vnpu_kp_scan {
	uint32_t op;		/* enum vnpu_scan_op */
	uint32_t dim;		/* < ndim; ndim >= 1 */
	uint64_t reserved;
	struct vnpu_tensor input;
	struct vnpu_tensor out;
};

/* SORT: each line along dim sorted ascending (descending 1: descending),
 * stably: values[.., i, ..] the line's i-th value in that order,
 * indices[.., i, ..] (I64) the position along dim it came from; equal
 * values keep their order. Floats order NaN after every number (before,
 * descending), -0.0 equal to 0.0. input and values of one dtype (any),
 * all three of one shape; reserved must be zero. values may be input
 * itself, not another overlapping tensor, nor may values and indices
 * overlap. */
struct vnpu_kp_sort {
	uint32_t dim;		/* < ndim; ndim >= 1 */
	uint32_t descending;	/* 0 or 1 */
	uint64_t reserved;
	struct vnpu_tensor input;
	struct vnpu_tensor values;
	struct vnpu_tensor indices;
};

/* TRANSDATA: same logical shape and dtype, src and out in different formats:
 * between ND/NCHW/NHWC (strided) and NC1HWC0, FRACTAL_Z (4-D) or FRACTAL_NZ
 * (rank >= 2), either direction, or between two plain formats. Padding of an
 * internal-format output is written as zero. 8-byte dtypes (I64, F64) have
 * no internal format: plain to plain only. */
struct vnpu_kp_transdata {
	struct vnpu_tensor src;
	struct vnpu_tensor out;
};

VNPU_ASSERT_SIZE(struct vnpu_kargs_header, 16);
VNPU_ASSERT_SIZE(struct vnpu_kargs_buffer, 24);
VNPU_ASSERT_SIZE(struct vnpu_tensor, 152);
VNPU_ASSERT_OFFSET(struct vnpu_tensor, offset, 16);
VNPU_ASSERT_OFFSET(struct vnpu_tensor, sizes, 24);
VNPU_ASSERT_OFFSET(struct vnpu_tensor, strides, 88);
VNPU_ASSERT_SIZE(struct vnpu_kp_fill, 168);
VNPU_ASSERT_SIZE(struct vnpu_kp_range, 200);
VNPU_ASSERT_SIZE(struct vnpu_kp_cast, 304);
VNPU_ASSERT_SIZE(struct vnpu_kp_unary, 312);
VNPU_ASSERT_SIZE(struct vnpu_kp_binary, 472);
VNPU_ASSERT_SIZE(struct vnpu_kp_where, 608);
VNPU_ASSERT_SIZE(struct vnpu_kp_gemm, 632);
VNPU_ASSERT_SIZE(struct vnpu_kp_conv2d, 648);
VNPU_ASSERT_SIZE(struct vnpu_kp_pool2d, 504);
VNPU_ASSERT_SIZE(struct vnpu_kp_softmax, 312);
VNPU_ASSERT_SIZE(struct vnpu_kp_layer_norm, 936);
VNPU_ASSERT_SIZE(struct vnpu_kp_reduce, 312);
VNPU_ASSERT_SIZE(struct vnpu_kp_scan, 320);
VNPU_ASSERT_SIZE(struct vnpu_kp_sort, 472);
VNPU_ASSERT_SIZE(struct vnpu_kp_transdata, 304);
VNPU_ASSERT_SIZE(struct vnpu_kp_qgemm, 648);
VNPU_ASSERT_OFFSET(struct vnpu_kp_binary, a, 16);
VNPU_ASSERT_OFFSET(struct vnpu_kp_gemm, a, 24);
VNPU_ASSERT_OFFSET(struct vnpu_kp_qgemm, a, 40);
VNPU_ASSERT_OFFSET(struct vnpu_kp_conv2d, input, 40);
VNPU_ASSERT_OFFSET(struct vnpu_kp_pool2d, input, 48);
VNPU_ASSERT_OFFSET(struct vnpu_kp_layer_norm, input, 24);
VNPU_STATIC_ASSERT(sizeof(struct vnpu_kargs_header) +
	       VNPU_KARGS_MAX_BUFFERS * sizeof(struct vnpu_kargs_buffer) +
	       sizeof(struct vnpu_kp_layer_norm) <= 4096,
	       "the largest argument block fits VNPU_KARGS_MAX_BYTES");

/* ---- what the device accepts as a tensor (host and device agree) ------ */

static inline bool vnpu_format_is_internal(uint32_t format)
{
	return format == VNPU_FORMAT_NC1HWC0 ||
	       format == VNPU_FORMAT_FRACTAL_Z ||
	       format == VNPU_FORMAT_FRACTAL_NZ;
}

static inline bool vnpu_format_is_plain(uint32_t format)
{
	return format == VNPU_FORMAT_ND || format == VNPU_FORMAT_NCHW ||
	       format == VNPU_FORMAT_NHWC;
}

/*
 * A tensor of `sizes` at the start of `buffer`: row-major dense strides in
 * a plain format (a dim of size 0 or 1 steps as one of size 1, as
 * PyTorch's contiguous strides), none in an internal one, whose layout
 * the format fixes. An ndim above VNPU_MAX_DIMS is kept, for the device
 * to refuse, with the first VNPU_MAX_DIMS sizes.
 */
static inline struct vnpu_tensor vnpu_tensor_dense(uint32_t buffer, uint32_t dtype,
						   uint32_t format, uint32_t ndim,
						   const int64_t *sizes)
{
	/* member by member: the header is also C++ (torch_vnpu) */
	struct vnpu_tensor t;
	int64_t stride = 1;
	uint32_t n = ndim < VNPU_MAX_DIMS ? ndim : VNPU_MAX_DIMS;

	memset(&t, 0, sizeof(t));
	t.buffer = buffer;
	t.dtype = dtype;
	t.format = format;
	t.ndim = ndim;
	for (uint32_t i = n; i-- > 0;) {
		t.sizes[i] = sizes[i];
		if (!vnpu_format_is_internal(format)) {
			t.strides[i] = stride;
			stride *= sizes[i] > 1 ? sizes[i] : 1;
		}
	}
	return t;
}

/* An f32 rows x cols matrix in ND at the start of `buffer`, with strides
 * rs and cs (elements; 0 broadcasts). */
static inline struct vnpu_tensor vnpu_tensor_f32_2d(uint32_t buffer,
						    int64_t rows, int64_t cols,
						    int64_t rs, int64_t cs)
{
	const int64_t sizes[2] = { rows, cols };
	struct vnpu_tensor t = vnpu_tensor_dense(buffer, VNPU_DTYPE_F32,
						 VNPU_FORMAT_ND, 2, sizes);

	t.strides[0] = rs;
	t.strides[1] = cs;
	return t;
}

/*
 * True when no two logical elements of t share memory (internal formats
 * always): the device refuses an output that fails this (INVALID_ARGS),
 * since its blocks write disjoint element ranges and would race on one
 * location. A sufficient test: with the dims of size > 1 sorted by
 * stride, each stride steps past everything the smaller dims span. The
 * device bounds every span by the buffer first; a host calling this on
 * an unchecked descriptor must bound sizes*strides itself.
 */
static inline bool vnpu_tensor_is_injective(const struct vnpu_tensor *t)
{
	int64_t sizes[VNPU_MAX_DIMS], strides[VNPU_MAX_DIMS];
	uint32_t n = 0;
	int64_t span = 0;

	if (vnpu_format_is_internal(t->format))
		return true;
	for (uint32_t i = 0; i < t->ndim && i < VNPU_MAX_DIMS; i++) {
		uint32_t j;

		if (t->sizes[i] == 0)
			return true;
		if (t->sizes[i] == 1)
			continue;
		for (j = n++; j > 0 && strides[j - 1] > t->strides[i]; j--) {
			strides[j] = strides[j - 1];
			sizes[j] = sizes[j - 1];
		}
		strides[j] = t->strides[i];
		sizes[j] = t->sizes[i];
	}
	for (uint32_t i = 0; i < n; i++) {
		if (strides[i] <= span)
			return false;
		span += (sizes[i] - 1) * strides[i];
	}
	return true;
}

#endif /* VNPU_KERNEL_ABI_H */
