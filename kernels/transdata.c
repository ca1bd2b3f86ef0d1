// SPDX-License-Identifier: MIT
/*
 * TRANSDATA: moves a tensor between a plain strided layout (ND, NCHW, NHWC)
 * and a packed internal format (NC1HWC0, FRACTAL_Z, FRACTAL_NZ), or between
 * two plain layouts. Bytes are moved, never converted.
 *
 * Plain formats: `sizes` are the logical sizes in the tensor's own dim order
 * and the strides say where each element lives; the label (ND, NCHW, NHWC)
 * is informational. A channels-last tensor is therefore [N,C,H,W] with NHWC
 * strides, and NCHW -> NHWC is a strided copy.
 *
 * Every internal format stores tiles of R rows by C0 columns, contiguous
 * (row-major) in storage, whose columns run along one logical dim (c or k)
 * and whose rows run along another (w or h*w for NC1HWC0, n for FRACTAL_Z,
 * m for FRACTAL_NZ). The remaining storage dims ("outer dims") select the
 * tile. A plan lists the outer dims with their storage and plain strides; a
 * block walks its range of tiles and copies each with a tile kernel: row
 * memcpys when the plain side is contiguous along the columns, 16-byte
 * vector transposes when it is contiguous along the rows, element copies
 * otherwise. Each tile is a disjoint part of the output, so blocks split
 * the tiles, and the block that owns a tile also writes its padding.
 *
 * Two cases have their own walks, because the tile kernels would copy
 * them element by element: FRACTAL_Z with the plain side contiguous along
 * (h, w), as NCHW weights are (block transposes of C0 x H*W per weight
 * row; for 3x3 kernels on x86, AVX2 or AVX-512 routines picked at run
 * time), and plain -> plain copies that transpose two dim groups, as
 * NCHW <-> NHWC does (tiled block transposes). Other plain -> plain
 * copies are strided row copies.
 */
#include <pthread.h>
#include <string.h>

#include "kernel.h"
#include "layout.h"
#include "tensor.h"

#define TD_MAX_OUTER (VNPU_MAX_DIMS + 2)
/* Rows of an NC1HWC0 tile: long enough to amortise the walk, short enough
 * to split one large plane between blocks. */
#define TD_NC1HWC0_ROWS 256
/* Rows of a FRACTAL_Z / FRACTAL_NZ tile: 8 fractals stacked along n or m,
 * which are consecutive in storage. Taller tiles give both sides longer
 * runs (measured: 16-row tiles ran about 40% slower on 4096 x 4096). */
#define TD_FRACTAL_ROWS	 (8 * VNPU_CUBE_M0)
#define TD_ALWAYS_INLINE static inline __attribute__((always_inline))

struct td_plan {
	uint64_t c0;	    /* tile columns */
	uint64_t tile_rows; /* rows per tile (the last tile may have fewer) */
	uint64_t row_limit; /* logical extent of the row dim */
	uint64_t row_pad_limit; /* rows in storage: row_limit rounded up to 16
				 * for fractals, row_limit for NC1HWC0 */
	uint64_t col_limit;	/* logical extent of the column dim */
	uint64_t row_stride;	/* plain elements between tile rows */
	uint64_t col_stride;	/* plain elements between tile columns */
	uint32_t nouter;
	uint32_t row_dim; /* outer dim that steps the tile rows */
	uint32_t col_dim; /* outer dim that steps the tile columns */
	uint64_t extent[TD_MAX_OUTER];
	uint64_t st_stride[TD_MAX_OUTER]; /* storage elements */
	uint64_t pl_stride[TD_MAX_OUTER]; /* plain elements */
};

static void td_add_dim(struct td_plan *p, uint64_t extent, uint64_t st_stride,
		       uint64_t pl_stride)
{
	p->extent[p->nouter] = extent;
	p->st_stride[p->nouter] = st_stride;
	p->pl_stride[p->nouter] = pl_stride;
	p->nouter++;
}

/* NC1HWC0 [N, C1, H, W, C0]: tiles are runs of w (or of h*w when the plain
 * side lets h and w merge) within one (n, c1). */
static void td_plan_nc1hwc0(struct td_plan *p, const struct vnpu_tensor *pl,
			    const struct vnpu_nchw_geom *g)
{
	const int64_t *s = pl->strides;
	uint64_t rows, row_stride, h_outer, blocks;

	if (g->w == 1) {
		rows = g->h;
		row_stride = (uint64_t)s[2];
		h_outer = 1;
	} else if ((uint64_t)s[2] == g->w * (uint64_t)s[3]) {
		rows = g->h * g->w;
		row_stride = (uint64_t)s[3];
		h_outer = 1;
	} else {
		rows = g->w;
		row_stride = (uint64_t)s[3];
		h_outer = g->h;
	}
	p->tile_rows = rows < TD_NC1HWC0_ROWS ? rows : TD_NC1HWC0_ROWS;
	p->row_limit = rows;
	p->row_stride = row_stride;
	p->col_limit = g->c;
	p->col_stride = (uint64_t)s[1];
	p->row_pad_limit = rows;
	blocks = vnpu_ceil_div(rows, p->tile_rows);

	td_add_dim(p, g->n, g->c1 * g->h * g->w * g->c0, (uint64_t)s[0]);
	p->col_dim = p->nouter;
	td_add_dim(p, g->c1, g->h * g->w * g->c0, g->c0 * (uint64_t)s[1]);
	td_add_dim(p, h_outer, g->w * g->c0, (uint64_t)s[2]);
	p->row_dim = p->nouter;
	td_add_dim(p, blocks, p->tile_rows * g->c0, p->tile_rows * row_stride);
}

/* FRACTAL_Z [C1*H*W, N1, 16, C0]: a tile is a stack of fractals of one
 * (c1, h, w), n down, c across; rows past N (up to N1*16) are padding. */
static void td_plan_fractal_z(struct td_plan *p, const struct vnpu_tensor *pl,
			      const struct vnpu_nchw_geom *g)
{
	const int64_t *s = pl->strides;
	uint64_t fractal = VNPU_CUBE_M0 * g->c0;

	p->tile_rows = TD_FRACTAL_ROWS;
	p->row_limit = g->n;
	p->row_pad_limit = g->n1 * VNPU_CUBE_M0;
	p->row_stride = (uint64_t)s[0];
	p->col_limit = g->c;
	p->col_stride = (uint64_t)s[1];

	p->col_dim = p->nouter;
	td_add_dim(p, g->c1, g->h * g->w * g->n1 * fractal,
		   g->c0 * (uint64_t)s[1]);
	td_add_dim(p, g->h, g->w * g->n1 * fractal, (uint64_t)s[2]);
	td_add_dim(p, g->w, g->n1 * fractal, (uint64_t)s[3]);
	p->row_dim = p->nouter;
	td_add_dim(p, vnpu_ceil_div(g->n1 * VNPU_CUBE_M0, p->tile_rows),
		   p->tile_rows * g->c0, p->tile_rows * (uint64_t)s[0]);
}

/* FRACTAL_NZ [b..., K1, M1, 16, C0]: a tile is a stack of fractals of one
 * (b, k1), m down, k across; rows past M (up to M1*16) are padding. Batch
 * dims stay outer dims with their own plain strides. */
static void td_plan_fractal_nz(struct td_plan *p, const struct vnpu_tensor *pl,
			       const struct vnpu_nz_geom *g)
{
	const int64_t *s = pl->strides;
	uint32_t nd = pl->ndim;
	uint64_t fractal = VNPU_CUBE_M0 * g->c0;
	uint64_t matrix = g->k1 * g->m1 * fractal;
	uint64_t st = matrix * g->batch;

	p->tile_rows = TD_FRACTAL_ROWS;
	p->row_limit = g->m;
	p->row_pad_limit = g->m1 * VNPU_CUBE_M0;
	p->row_stride = (uint64_t)s[nd - 2];
	p->col_limit = g->k;
	p->col_stride = (uint64_t)s[nd - 1];

	for (uint32_t i = 0; i + 2 < nd; i++) {
		st /= (uint64_t)pl->sizes[i];
		td_add_dim(p, (uint64_t)pl->sizes[i], st, (uint64_t)s[i]);
	}
	p->col_dim = p->nouter;
	td_add_dim(p, g->k1, g->m1 * fractal, g->c0 * (uint64_t)s[nd - 1]);
	p->row_dim = p->nouter;
	td_add_dim(p, vnpu_ceil_div(g->m1 * VNPU_CUBE_M0, p->tile_rows),
		   p->tile_rows * g->c0, p->tile_rows * (uint64_t)s[nd - 2]);
}

/*
 * Walk the plain side roughly in its own memory order: outer dims sorted by
 * plain stride, largest first (stable, so storage order breaks ties). The
 * storage side then moves in whole tiles, the plain side in C0-wide pieces
 * of rows it finishes soon after.
 */
static void td_sort_outer(struct td_plan *p, uint32_t *order)
{
	for (uint32_t i = 0; i < p->nouter; i++)
		order[i] = i;
	for (uint32_t i = 1; i < p->nouter; i++) {
		uint32_t v = order[i], j = i;

		while (j > 0 && p->pl_stride[order[j - 1]] < p->pl_stride[v]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
}

/* Builds the plan of a checked plain/internal pair; `pl` is the plain side
 * (its strides), `in` the internal one (its format and geometry). The sizes
 * are equal (validated). Returns the tile count. */
static uint64_t td_plan_build(struct td_plan *p, const struct vnpu_tensor *pl,
			      const struct vnpu_tensor *in)
{
	struct td_plan raw;
	uint32_t order[TD_MAX_OUTER];
	uint64_t tiles = 1;

	memset(&raw, 0, sizeof(raw));
	raw.c0 = VNPU_C0(vnpu_dtype_size(in->dtype));
	if (in->format == VNPU_FORMAT_FRACTAL_NZ) {
		struct vnpu_nz_geom g = vnpu_nz_geom(in);

		td_plan_fractal_nz(&raw, pl, &g);
	} else {
		struct vnpu_nchw_geom g = vnpu_nchw_geom(in);

		if (in->format == VNPU_FORMAT_NC1HWC0)
			td_plan_nc1hwc0(&raw, pl, &g);
		else
			td_plan_fractal_z(&raw, pl, &g);
	}

	*p = raw;
	td_sort_outer(&raw, order);
	for (uint32_t i = 0; i < raw.nouter; i++) {
		uint32_t d = order[i];

		p->extent[i] = raw.extent[d];
		p->st_stride[i] = raw.st_stride[d];
		p->pl_stride[i] = raw.pl_stride[d];
		if (d == raw.row_dim)
			p->row_dim = i;
		if (d == raw.col_dim)
			p->col_dim = i;
		tiles *= raw.extent[d];
	}
	return tiles;
}

/*
 * B x B transposes of 16-byte vectors (B = 16 / itemsize):
 * out[j * os + i] = in[i * is + j], strides in bytes. Each of the log2(B)
 * stages interleaves row i with row i + B/2 into rows 2i and 2i+1; that
 * rotates one bit of the row index into the column index, so log2(B)
 * stages transpose. Plain C with vector extensions (GCC and clang).
 */
typedef uint8_t td_v16u8 __attribute__((vector_size(16)));
typedef uint16_t td_v8u16 __attribute__((vector_size(16)));
typedef uint32_t td_v4u32 __attribute__((vector_size(16)));

/* One n x n transpose of vectors of type vt (`bytes` each), by `stages`
 * = log2(n) interleaves: `lo` and `hi` are the shuffle indices that
 * interleave the low and the high halves of two rows. */
#define TD_TRANSPOSE(name, vt, n, bytes, stages, lo, hi)                      \
	TD_ALWAYS_INLINE void name(char *out, size_t os, const char *in,      \
				   size_t is)                                 \
	{                                                                     \
		vt v[n], t[n];                                                \
									      \
		for (size_t i = 0; i < (n); i++)                              \
			memcpy(&v[i], in + i * is, bytes);                    \
		for (int stage = 0; stage < (stages); stage++) {              \
			for (size_t i = 0; i < (n) / 2; i++) {                \
				t[2 * i] = __builtin_shufflevector(           \
					v[i], v[i + (n) / 2], lo);            \
				t[2 * i + 1] = __builtin_shufflevector(       \
					v[i], v[i + (n) / 2], hi);            \
			}                                                     \
			memcpy(v, t, sizeof(v));                              \
		}                                                             \
		for (size_t i = 0; i < (n); i++)                              \
			memcpy(out + i * os, &v[i], bytes);                   \
	}

#define TD_LO16 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define TD_HI16 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#define TD_LO8 0, 8, 1, 9, 2, 10, 3, 11
#define TD_HI8 4, 12, 5, 13, 6, 14, 7, 15
#define TD_LO4 0, 4, 1, 5
#define TD_HI4 2, 6, 3, 7
#define TD_LO2 0, 2
#define TD_HI2 1, 3

TD_TRANSPOSE(td_transpose_1, td_v16u8, 16, 16, 4, TD_LO16, TD_HI16)
TD_TRANSPOSE(td_transpose_2, td_v8u16, 8, 16, 3, TD_LO8, TD_HI8)
TD_TRANSPOSE(td_transpose_4, td_v4u32, 4, 16, 2, TD_LO4, TD_HI4)

TD_ALWAYS_INLINE void td_transpose(char *out, size_t os, const char *in,
				   size_t is, size_t isz)
{
	if (isz == 1)
		td_transpose_1(out, os, in, is);
	else if (isz == 2)
		td_transpose_2(out, os, in, is);
	else
		td_transpose_4(out, os, in, is);
}

/*
 * The same transposes on 8-byte vectors (B / 2 x B / 2 elements), for the
 * column remainders of a block too narrow for the 16-byte ones (3x3
 * kernels: 9 columns are 8 + 1).
 */
typedef uint8_t td_v8u8 __attribute__((vector_size(8)));
typedef uint16_t td_v4u16 __attribute__((vector_size(8)));
typedef uint32_t td_v2u32 __attribute__((vector_size(8)));

TD_TRANSPOSE(td_transpose_half_1, td_v8u8, 8, 8, 3, TD_LO8, TD_HI8)
TD_TRANSPOSE(td_transpose_half_2, td_v4u16, 4, 8, 2, TD_LO4, TD_HI4)
TD_TRANSPOSE(td_transpose_half_4, td_v2u32, 2, 8, 1, TD_LO2, TD_HI2)

TD_ALWAYS_INLINE void td_transpose_half(char *out, size_t os, const char *in,
					size_t is, size_t isz)
{
	if (isz == 1)
		td_transpose_half_1(out, os, in, is);
	else if (isz == 2)
		td_transpose_half_2(out, os, in, is);
	else
		td_transpose_half_4(out, os, in, is);
}

/*
 * out[j * os + i] = in[i * is + j] for i < rows, j < cols (strides in
 * bytes): a block whose input rows and output rows are both contiguous.
 * B x B vector transposes (16-byte vectors, or 8-byte ones when a side is
 * shorter than 16 bytes, as a 3x3 kernel's 9 int8 columns are), then
 * element copies for the leftover columns and rows. The vector shuffles
 * are the bottleneck, so the leftovers are not covered by overlapping
 * transposes: element copies use the load and store ports instead
 * (measured faster on 16 x 9 blocks).
 */
TD_ALWAYS_INLINE void td_transpose_block(char *out, size_t os, const char *in,
					 size_t is, uint64_t rows,
					 uint64_t cols, size_t isz)
{
	const uint64_t full = 16 / isz;
	const uint64_t vec = rows >= full && cols >= full ? full : full / 2;
	const uint64_t rend = rows / vec * vec, cend = cols / vec * vec;
	uint64_t i = 0, j;

	/* Four vector rows at a time: each output row then gets 64 bytes,
	 * a whole cache line, before the walk moves on to the next ones. */
	for (uint64_t i0 = 0; i0 < rend; i0 = i) {
		uint64_t iend = i0 + 4 * vec < rend ? i0 + 4 * vec : rend;

		for (j = 0; j < cend; j += vec)
			for (i = i0; i < iend; i += vec)
				if (vec == full)
					td_transpose(out + j * os + i * isz, os,
						     in + i * is + j * isz, is,
						     isz);
				else
					td_transpose_half(
						out + j * os + i * isz, os,
						in + i * is + j * isz, is, isz);
		for (j = cend; j < cols; j++)
			for (i = i0; i < iend; i++)
				memcpy(out + j * os + i * isz,
				       in + i * is + j * isz, isz);
		i = iend;
	}
	/* leftover rows, or a side too short for vectors (3 channels):
	 * the longer side innermost, so one of the two runs contiguously */
	if (cols >= rows - i) {
		for (; i < rows; i++)
			for (j = 0; j < cols; j++)
				memcpy(out + j * os + i * isz,
				       in + i * is + j * isz, isz);
	} else {
		for (j = 0; j < cols; j++)
			for (uint64_t k = i; k < rows; k++)
				memcpy(out + j * os + k * isz,
				       in + k * is + j * isz, isz);
	}
}

/* Storage tile (st, rv x cv valid of c0 columns, st_rows rows written)
 * from the plain side; everything outside rv x cv is written as zero. */
TD_ALWAYS_INLINE void td_pack_tile(char *st, const char *pl,
				   const struct td_plan *p, uint64_t rv,
				   uint64_t cv, uint64_t st_rows, size_t isz)
{
	const size_t c0 = isz == 1 ? 32 : 16;
	const size_t row_bytes = c0 * isz;
	const size_t rs = p->row_stride * isz, cs = p->col_stride * isz;
	uint64_t r = 0;

	if (cs == isz && cv == c0) {
		/* constant-size copies the compiler inlines */
		for (; r < rv; r++)
			memcpy(st + r * row_bytes, pl + r * rs, row_bytes);
	} else if (cs == isz) {
		for (; r < rv; r++) {
			memcpy(st + r * row_bytes, pl + r * rs, cv * isz);
			memset(st + r * row_bytes + cv * isz, 0,
			       (c0 - cv) * isz);
		}
	} else {
		const size_t vec = 16 / isz;

		if (rs == isz && cv == c0) {
			for (; r + vec <= rv; r += vec)
				for (size_t c = 0; c < c0; c += vec)
					td_transpose(st + (r * c0 + c) * isz,
						     row_bytes,
						     pl + c * cs + r * isz, cs,
						     isz);
		}
		for (; r < rv; r++) {
			char *d = st + r * row_bytes;
			const char *s = pl + r * rs;

			for (size_t c = 0; c < cv; c++)
				memcpy(d + c * isz, s + c * cs, isz);
			memset(d + cv * isz, 0, (c0 - cv) * isz);
		}
	}
	if (st_rows > rv)
		memset(st + rv * row_bytes, 0, (st_rows - rv) * row_bytes);
}

/* Plain side from the valid rv x cv part of a storage tile. */
TD_ALWAYS_INLINE void td_unpack_tile(char *pl, const char *st,
				     const struct td_plan *p, uint64_t rv,
				     uint64_t cv, size_t isz)
{
	const size_t c0 = isz == 1 ? 32 : 16;
	const size_t row_bytes = c0 * isz;
	const size_t rs = p->row_stride * isz, cs = p->col_stride * isz;
	uint64_t r = 0;

	if (cs == isz && cv == c0) {
		for (; r < rv; r++)
			memcpy(pl + r * rs, st + r * row_bytes, row_bytes);
		return;
	}
	if (cs == isz) {
		for (; r < rv; r++)
			memcpy(pl + r * rs, st + r * row_bytes, cv * isz);
		return;
	}
	if (rs == isz && cv == c0) {
		const size_t vec = 16 / isz;

		for (; r + vec <= rv; r += vec)
			for (size_t c = 0; c < c0; c += vec)
				td_transpose(pl + c * cs + r * isz, cs,
					     st + (r * c0 + c) * isz, row_bytes,
					     isz);
	}
	for (; r < rv; r++) {
		const char *s = st + r * row_bytes;
		char *d = pl + r * rs;

		for (size_t c = 0; c < cv; c++)
			memcpy(d + c * cs, s + c * isz, isz);
	}
}

/*
 * n full tiles side by side along the columns, plain side contiguous along
 * them. Two rows at a time across all n tiles: the plain side streams two
 * rows of n * C0 elements and the storage side gets whole 64-byte lines
 * (two 32-byte tile rows), so no line is visited twice. Tile by tile, a
 * 32-byte row leaves half a line behind that, with power-of-two row
 * pitches, is often evicted before it is needed.
 */
TD_ALWAYS_INLINE void td_rows_group(char *st, char *pl, const struct td_plan *p,
				    uint64_t rv, uint64_t st_rows, uint64_t n,
				    uint64_t st_tile, bool pack, size_t isz)
{
	const size_t row_bytes = (isz == 1 ? 32 : 16) * isz;
	const size_t rs = p->row_stride * isz;

	uint64_t r = 0;

	for (; r + 2 <= rv; r += 2) {
		char *s = st + r * row_bytes;
		char *d = pl + r * rs;

		for (uint64_t t = 0; t < n; t++) {
			char *tile = s + t * st_tile;
			char *row = d + t * row_bytes;

			if (pack) {
				memcpy(tile, row, row_bytes);
				memcpy(tile + row_bytes, row + rs, row_bytes);
			} else {
				memcpy(row, tile, row_bytes);
				memcpy(row + rs, tile + row_bytes, row_bytes);
			}
		}
	}
	for (; r < rv; r++) {
		char *s = st + r * row_bytes;
		char *d = pl + r * rs;

		for (uint64_t t = 0; t < n; t++) {
			if (pack)
				memcpy(s + t * st_tile, d + t * row_bytes,
				       row_bytes);
			else
				memcpy(d + t * row_bytes, s + t * st_tile,
				       row_bytes);
		}
	}
	if (pack && st_rows > rv)
		for (uint64_t t = 0; t < n; t++)
			memset(st + t * st_tile + rv * row_bytes, 0,
			       (st_rows - rv) * row_bytes);
}

#define TD_GROUP_BYTES 1024

/* Walks tiles [begin, end) of the plan; itemsize is a constant in each
 * instantiation so the tile kernels specialise. */
TD_ALWAYS_INLINE void td_walk(const struct td_plan *p, char *st_base,
			      char *pl_base, bool pack, uint64_t begin,
			      uint64_t end, size_t isz)
{
	uint64_t idx[TD_MAX_OUTER];
	uint64_t st_off = 0, pl_off = 0, rem = begin;

	for (uint32_t d = p->nouter; d-- > 0;) {
		idx[d] = rem % p->extent[d];
		rem /= p->extent[d];
		st_off += idx[d] * p->st_stride[d];
		pl_off += idx[d] * p->pl_stride[d];
	}
	const uint64_t max_group = TD_GROUP_BYTES / (p->c0 * isz);
	const bool groups = p->col_stride == 1 && p->nouter > 0 &&
			    p->col_dim == p->nouter - 1;
	uint64_t work = 0;

	for (uint64_t tile = begin; tile < end;) {
		uint64_t row0 = idx[p->row_dim] * p->tile_rows;
		uint64_t col0 = idx[p->col_dim] * p->c0;
		uint64_t rv = p->row_limit - row0;
		uint64_t cv = p->col_limit - col0;
		uint64_t st_rows = p->row_pad_limit - row0, n = 1;

		rv = rv < p->tile_rows ? rv : p->tile_rows;
		cv = cv < p->c0 ? cv : p->c0;
		st_rows = st_rows < p->tile_rows ? st_rows : p->tile_rows;
		if (groups) {
			/* full tiles left along the columns, in this block */
			n = (p->col_limit - col0) / p->c0;
			n = n < max_group ? n : max_group;
			n = n < end - tile ? n : end - tile;
		}
		if (vnpu_kernel_poll(&work, p->tile_rows * p->c0 * n))
			return;
		if (n > 1) {
			td_rows_group(st_base + st_off * isz,
				      pl_base + pl_off * isz, p, rv, st_rows, n,
				      p->st_stride[p->col_dim] * isz, pack,
				      isz);
		} else {
			n = 1;
			if (pack)
				td_pack_tile(st_base + st_off * isz,
					     pl_base + pl_off * isz, p, rv, cv,
					     st_rows, isz);
			else
				td_unpack_tile(pl_base + pl_off * isz,
					       st_base + st_off * isz, p, rv,
					       cv, isz);
		}
		tile += n;

		/* odometer; unsigned wrap-around undoes a finished dim */
		for (; n > 0; n--) {
			for (uint32_t d = p->nouter; d-- > 0;) {
				st_off += p->st_stride[d];
				pl_off += p->pl_stride[d];
				if (++idx[d] < p->extent[d])
					break;
				st_off -= p->extent[d] * p->st_stride[d];
				pl_off -= p->extent[d] * p->pl_stride[d];
				idx[d] = 0;
			}
		}
	}
}

static void td_walk_1(const struct td_plan *p, char *st, char *pl, bool pack,
		      uint64_t begin, uint64_t end)
{
	td_walk(p, st, pl, pack, begin, end, 1);
}

static void td_walk_2(const struct td_plan *p, char *st, char *pl, bool pack,
		      uint64_t begin, uint64_t end)
{
	td_walk(p, st, pl, pack, begin, end, 2);
}

static void td_walk_4(const struct td_plan *p, char *st, char *pl, bool pack,
		      uint64_t begin, uint64_t end)
{
	td_walk(p, st, pl, pack, begin, end, 4);
}

/*
 * FRACTAL_Z with the plain side contiguous along (h, w), as NCHW weights
 * are. For one n, the C0 channels of a channel group are a C0 x H*W block
 * of the plain side with contiguous rows, and in storage they are one
 * C0-element row in each of the H*W fractal stacks of that group: a block
 * transpose. The work unit is (c1, N block of 16 rows) over every (h, w),
 * a disjoint set of storage rows (padding rows and columns included) and
 * of plain elements.
 */
struct td_fz_plan {
	uint64_t n, c, hw, c0, c1, n1;
	uint64_t n_stride, c_stride; /* plain elements */
};

/* The plan when the plain side suits it: (h, w) merge into one dim with
 * stride 1 and c is not contiguous itself (then the row copies win). */
static bool td_fz_plan_build(struct td_fz_plan *f, const struct vnpu_tensor *pl,
			     const struct vnpu_tensor *in)
{
	struct vnpu_nchw_geom g;
	const int64_t *s = pl->strides;
	uint64_t hw_stride;

	if (in->format != VNPU_FORMAT_FRACTAL_Z)
		return false;
	g = vnpu_nchw_geom(in);
	if (g.h * g.w <= 1 || s[1] == 1)
		return false;
	if (g.w == 1)
		hw_stride = (uint64_t)s[2];
	else if (g.h == 1 || (uint64_t)s[2] == g.w * (uint64_t)s[3])
		hw_stride = (uint64_t)s[3];
	else
		return false;
	if (hw_stride != 1)
		return false;
	f->n = g.n;
	f->c = g.c;
	f->hw = g.h * g.w;
	f->c0 = g.c0;
	f->c1 = g.c1;
	f->n1 = g.n1;
	f->n_stride = (uint64_t)s[0];
	f->c_stride = (uint64_t)s[1];
	return true;
}

/* (h, w) positions of one FRACTAL_Z row transposed between two polls of
 * the cancellation hook. */
#define TD_FZ_SEGMENT 4096

/* Rows [r0, r1) of unit (c1, nb): the portable transposes. Returns false
 * when the cancellation hook asked to stop. */
TD_ALWAYS_INLINE bool td_fz_rows(const struct td_fz_plan *f, char *st, char *pl,
				 bool pack, uint64_t unit, uint64_t r0,
				 uint64_t r1, uint64_t *work, size_t isz)
{
	const uint64_t c0 = isz == 1 ? 32 : 16;
	const size_t row_bytes = c0 * isz;
	/* storage bytes from one (h, w) fractal stack to the next */
	const size_t hw_pitch = f->n1 * VNPU_CUBE_M0 * row_bytes;
	const size_t cs = f->c_stride * isz;
	uint64_t c1 = unit / f->n1, nb = unit % f->n1;
	uint64_t cv = f->c - c1 * c0;
	char *st_unit =
		st + (c1 * f->hw * f->n1 + nb) * VNPU_CUBE_M0 * row_bytes;

	cv = cv < c0 ? cv : c0;
	for (uint64_t r = r0; r < r1; r++) {
		uint64_t n = nb * VNPU_CUBE_M0 + r;
		char *st_row = st_unit + r * row_bytes;
		char *pl_nc =
			pl + (n * f->n_stride + c1 * c0 * f->c_stride) * isz;

		if (vnpu_kernel_poll(work, f->hw * c0))
			return false;
		if (n >= f->n) {
			for (uint64_t k = 0; pack && k < f->hw; k++)
				memset(st_row + k * hw_pitch, 0, row_bytes);
			continue;
		}
		if (cv == c0 && f->hw == 9) {
			/* 3x3 kernels: constant sizes unroll */
			if (pack)
				td_transpose_block(st_row, hw_pitch, pl_nc, cs,
						   c0, 9, isz);
			else
				td_transpose_block(pl_nc, cs, st_row, hw_pitch,
						   9, c0, isz);
			continue;
		}
		/* (h, w) in segments: one row may be a big part of the
		 * buffer, and the hook is polled between them */
		for (uint64_t k0 = 0; k0 < f->hw; k0 += TD_FZ_SEGMENT) {
			uint64_t kn = f->hw - k0 < TD_FZ_SEGMENT
					      ? f->hw - k0
					      : TD_FZ_SEGMENT;

			if (k0 && vnpu_kernel_poll(work, VNPU_KERNEL_POLL_WORK))
				return false;
			if (pack)
				td_transpose_block(st_row + k0 * hw_pitch,
						   hw_pitch, pl_nc + k0 * isz,
						   cs, cv, kn, isz);
			else
				td_transpose_block(pl_nc + k0 * isz, cs,
						   st_row + k0 * hw_pitch,
						   hw_pitch, kn, cv, isz);
		}
		if (!pack)
			continue;
		for (uint64_t k = 0; cv < c0 && k < f->hw; k++)
			memset(st_row + k * hw_pitch + cv * isz, 0,
			       (c0 - cv) * isz);
	}
	return true;
}

static bool td_fz_rows_1(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t unit, uint64_t r0, uint64_t r1,
			 uint64_t *work)
{
	return td_fz_rows(f, st, pl, pack, unit, r0, r1, work, 1);
}

static bool td_fz_rows_2(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t unit, uint64_t r0, uint64_t r1,
			 uint64_t *work)
{
	return td_fz_rows(f, st, pl, pack, unit, r0, r1, work, 2);
}

static bool td_fz_rows_4(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t unit, uint64_t r0, uint64_t r1,
			 uint64_t *work)
{
	return td_fz_rows(f, st, pl, pack, unit, r0, r1, work, 4);
}

typedef bool (*td_fz_rows_fn)(const struct td_fz_plan *f, char *st, char *pl,
			      bool pack, uint64_t unit, uint64_t r0,
			      uint64_t r1, uint64_t *work);

static void td_fz_walk_1(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t begin, uint64_t end)
{
	uint64_t work = 0;

	for (uint64_t u = begin; u < end; u++)
		if (!td_fz_rows_1(f, st, pl, pack, u, 0, VNPU_CUBE_M0, &work))
			return;
}

static void td_fz_walk_2(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t begin, uint64_t end)
{
	uint64_t work = 0;

	for (uint64_t u = begin; u < end; u++)
		if (!td_fz_rows_2(f, st, pl, pack, u, 0, VNPU_CUBE_M0, &work))
			return;
}

static void td_fz_walk_4(const struct td_fz_plan *f, char *st, char *pl,
			 bool pack, uint64_t begin, uint64_t end)
{
	uint64_t work = 0;

	for (uint64_t u = begin; u < end; u++)
		if (!td_fz_rows_4(f, st, pl, pack, u, 0, VNPU_CUBE_M0, &work))
			return;
}

/*
 * 3x3 kernels with x86 vector units, picked at run time. A plain weight
 * row n of channel group c1 is a dense C0 x 9 block when the channels
 * are 9 elements apart (288 bytes for f16 and int8, 576 for f32), and
 * its nine storage rows are C0-element rows of 32 or 64 bytes, one in
 * each (h, w) stack. The stacks are a multiple of 4 KiB apart, so the
 * nine lines a row (pair) writes share one L1 set of 8 ways. Hence:
 * rows go in pairs (n, n + 1), which fill whole lines of a fractal, and
 * packing walks a run of pairs twice, writing stacks 0-3 and then 4-8
 * (reloading the blocks from L1): with nine lines of one set in flight,
 * lines are evicted before their stores commit (measured: one pass ran
 * 15-30% slower with AVX-512, up to 2x with AVX2). Units with partial
 * channel groups, the odd last row and padding rows take the portable
 * path.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TD_X86 1
#endif

/* Full units of one channel group given to a vector routine at once
 * (consecutive units are consecutive rows of every stack), and the rows
 * of f16 / int8 in one packing pass (f32: half as many), whose blocks
 * (9 KiB) stay in L1 for the second pass. */
#define TD_FZ9_GROUP 16
#define TD_FZ9_PASS  32

/* vnpu_transdata_set_isa's limit */
static uint32_t td_isa_limit = VNPU_TD_ISA_AVX512;

#ifdef TD_X86
/* Moves `npairs` row pairs: storage rows from st (row n of stack
 * (h, w) = 0; stacks `pitch` bytes apart), plain C0 x 9 blocks from pl,
 * `n_pitch` bytes from one row n to the next. */
typedef void (*td_fz9_pairs_fn)(char *st, size_t pitch, char *pl,
				size_t n_pitch, uint64_t npairs, bool pack);

/* Units [begin, end): whole row pairs of full channel groups with
 * `pairs`, the rest with the portable rows. */
static void td_fz9_walk(const struct td_fz_plan *f, char *st, char *pl,
			bool pack, uint64_t begin, uint64_t end, size_t isz,
			td_fz_rows_fn rows, td_fz9_pairs_fn pairs)
{
	const uint64_t c0 = isz == 1 ? 32 : 16;
	const size_t row_bytes = c0 * isz;
	const size_t pitch = f->n1 * VNPU_CUBE_M0 * row_bytes;
	const size_t n_pitch = f->n_stride * isz;
	const uint64_t full_nb = f->n / VNPU_CUBE_M0; /* units of 16 rows */
	uint64_t work = 0;

	for (uint64_t unit = begin; unit < end;) {
		uint64_t c1 = unit / f->n1, nb = unit % f->n1;
		uint64_t n0 = nb * VNPU_CUBE_M0, r = 0, g = 1;

		if ((c1 + 1) * c0 <= f->c) {
			if (nb < full_nb) {
				g = full_nb - nb < end - unit ? full_nb - nb
							      : end - unit;
				g = g < TD_FZ9_GROUP ? g : TD_FZ9_GROUP;
				r = VNPU_CUBE_M0;
			} else {
				r = (f->n - n0) / 2 * 2;
			}
			if (vnpu_kernel_poll(&work, g * r * 9 * c0))
				return;
			pairs(st + (c1 * 9 * f->n1 + nb) * VNPU_CUBE_M0 *
					      row_bytes,
			      pitch, pl + n0 * n_pitch + c1 * c0 * 9 * isz,
			      n_pitch, g * r / 2, pack);
		}
		/* the odd last row, padding rows, or a partial group */
		if (r < VNPU_CUBE_M0 &&
		    !rows(f, st, pl, pack, unit, r, VNPU_CUBE_M0, &work))
			return;
		unit += g;
	}
}

#define TD_AVX2	      __attribute__((target("avx2")))
#define TD_AVX512F    __attribute__((target("avx512f")))
#define TD_AVX512VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/*
 * f16 and int8 with AVX-512 (BW and VBMI): the 288-byte block and the nine
 * 32-byte rows are a fixed permutation of each other. Every 64-byte piece
 * of the result (two rows, or a 64-byte run of the block) takes elements
 * from all 288 bytes of the other side, so it is built from three windows:
 * 2-register permutes over bytes 0-127 and 128-255, a blend, and a masked
 * 1-register permute over the last 64 bytes. That is 4 shuffles per 64
 * bytes; transposes of 16-byte rows need about twice as many.
 */
struct td_perm9 {
	/* per 64-byte piece, per element lane: the source element, whose
	 * low bits index a 2-register window */
	_Alignas(64) uint8_t idx[5][64];
	/* the same in the last window: bytes 224-287 of the block (pack),
	 * row 8 of row n in the low half of its register (unpack) */
	_Alignas(64) uint8_t idx_r[5][64];
	/* unpack: row 8 of row n + 1, in the high half */
	_Alignas(64) uint8_t idx_r1[5][64];
	uint64_t hi[5];	  /* lanes from the second window */
	uint64_t last[5]; /* lanes from the last window */
};

/* f32 unpack: per 64-byte run j of the block, the element of each lane
 * in the (transposed) stack rows, see td512_unpack4 */
struct td_unpack4 {
	_Alignas(64) uint32_t idx[9][16];
	uint16_t hi[9];	  /* lanes from the next four channels */
	uint16_t col8[9]; /* lanes of column 8 */
};

static struct td_perm9 td_perm9_tab[2][2]; /* [itemsize - 1][pack] */
static struct td_unpack4 td_unpack4_tab;
static pthread_once_t td_tab_once = PTHREAD_ONCE_INIT;

/* A lane value of 1 or 2 bytes, little-endian. */
static void td_lane(uint8_t *p, uint32_t v, uint32_t isz)
{
	p[0] = (uint8_t)v;
	if (isz == 2)
		p[1] = (uint8_t)(v >> 8);
}

static void td_perm9_init(struct td_perm9 *t, uint32_t isz, bool pack)
{
	const uint32_t c0 = isz == 1 ? 32 : 16, e = 64 / isz;

	for (uint32_t j = 0; j < 5; j++) {
		t->hi[j] = t->last[j] = 0;
		for (uint32_t l = 0; l < e; l++) {
			uint32_t d = j * e + l, s = 0;

			/* lanes past the block (piece 4) take element 0 */
			if (d < 9 * c0)
				s = pack ? d % c0 * 9 + d / c0
					 : d % 9 * c0 + d / 9;
			if (s * isz >= 256)
				t->last[j] |= 1ull << l;
			else if (s * isz >= 128)
				t->hi[j] |= 1ull << l;
			td_lane(&t->idx[j][l * isz], s, isz);
			td_lane(&t->idx_r[j][l * isz],
				(s - (pack ? 224 : 256) / isz) & (e - 1), isz);
			td_lane(&t->idx_r1[j][l * isz],
				(s - 224 / isz) & (e - 1), isz);
		}
	}
}

static void td_unpack4_init(struct td_unpack4 *t)
{
	for (uint32_t j = 0; j < 9; j++) {
		t->hi[j] = t->col8[j] = 0;
		for (uint32_t l = 0; l < 16; l++) {
			uint32_t p = 16 * j + l, c = p / 9, k = p % 9;

			/* vpermt2d index into (columns 0-3, 4-7) of
			 * channels 4 (c / 4) .. + 3, or the channel in row 8 */
			t->idx[j][l] =
				k == 8 ? c : 16 * (k / 4) + 4 * (c % 4) + k % 4;
			if (c / 4 != 16 * j / 9 / 4)
				t->hi[j] |= (uint16_t)(1u << l);
			if (k == 8)
				t->col8[j] |= (uint16_t)(1u << l);
		}
	}
}

static void td_tab_init(void)
{
	for (uint32_t isz = 1; isz <= 2; isz++) {
		td_perm9_init(&td_perm9_tab[isz - 1][0], isz, false);
		td_perm9_init(&td_perm9_tab[isz - 1][1], isz, true);
	}
	td_unpack4_init(&td_unpack4_tab);
}

TD_AVX512VBMI TD_ALWAYS_INLINE __m512i td512_perm2(__m512i a, __m512i idx,
						   __m512i b, size_t isz)
{
	return isz == 1 ? _mm512_permutex2var_epi8(a, idx, b)
			: _mm512_permutex2var_epi16(a, idx, b);
}

TD_AVX512VBMI TD_ALWAYS_INLINE __m512i td512_blend(uint64_t m, __m512i a,
						   __m512i b, size_t isz)
{
	return isz == 1 ? _mm512_mask_blend_epi8(m, a, b)
			: _mm512_mask_blend_epi16((__mmask32)m, a, b);
}

TD_AVX512VBMI TD_ALWAYS_INLINE __m512i td512_mperm(__m512i src, uint64_t m,
						   __m512i idx, __m512i a,
						   size_t isz)
{
	return isz == 1 ? _mm512_mask_permutexvar_epi8(src, m, idx, a)
			: _mm512_mask_permutexvar_epi16(src, (__mmask32)m, idx,
							a);
}

/* Piece j of the permutation from windows (w0, w1), (w2, w3) and wr. */
TD_AVX512VBMI TD_ALWAYS_INLINE __m512i td512_piece(const struct td_perm9 *t,
						   const __m512i *idx,
						   const __m512i *idx_r, int j,
						   __m512i w0, __m512i w1,
						   __m512i w2, __m512i w3,
						   __m512i wr, size_t isz)
{
	__m512i lo = td512_perm2(w0, idx[j], w1, isz);
	__m512i hi = td512_perm2(w2, idx[j], w3, isz);

	return td512_mperm(td512_blend(t->hi[j], lo, hi, isz), t->last[j],
			   idx_r[j], wr, isz);
}

/* Stacks [2 j0, 2 j1) of npairs row pairs: one pass of packing. */
TD_AVX512VBMI TD_ALWAYS_INLINE void
td512_perm_pack(char *st, size_t pitch, const char *pl, size_t n_pitch,
		uint64_t npairs, const struct td_perm9 *t, const __m512i *idx,
		const __m512i *idx_r, int j0, int j1, size_t isz)
{
	for (uint64_t p = 0; p < npairs; p++) {
		char *s = st + p * 64;
		__m512i w[2][5], o[2];

		for (int h = 0; h < 2; h++) {
			const char *x = pl + (2 * p + h) * n_pitch;

			w[h][0] = _mm512_loadu_si512(x);
			w[h][1] = _mm512_loadu_si512(x + 64);
			w[h][2] = _mm512_loadu_si512(x + 128);
			w[h][3] = _mm512_loadu_si512(x + 192);
			w[h][4] = _mm512_loadu_si512(x + 224);
		}
		for (int j = j0; j < j1; j++) {
			for (int h = 0; h < 2; h++)
				o[h] = td512_piece(t, idx, idx_r, j, w[h][0],
						   w[h][1], w[h][2], w[h][3],
						   w[h][4], isz);
			/* rows 2j and 2j + 1 of n and n + 1: whole lines */
			_mm512_storeu_si512(
				s + 2 * j * pitch,
				_mm512_shuffle_i64x2(o[0], o[1], 0x44));
			if (j < 4)
				_mm512_storeu_si512(
					s + (2 * j + 1) * pitch,
					_mm512_shuffle_i64x2(o[0], o[1], 0xee));
		}
	}
}

TD_AVX512VBMI TD_ALWAYS_INLINE void
td512_perm_unpack(char *pl, size_t n_pitch, const char *st, size_t pitch,
		  uint64_t npairs, const struct td_perm9 *t, const __m512i *idx,
		  const __m512i *idx_r, const __m512i *idx_r1, size_t isz)
{
	for (uint64_t p = 0; p < npairs; p++) {
		const char *s = st + p * 64;
		__m512i r[9];

		for (int k = 0; k < 9; k++)
			r[k] = _mm512_loadu_si512(s + k * pitch);
		for (int h = 0; h < 2; h++) {
			char *x = pl + (2 * p + h) * n_pitch;
			/* rows 0-3 and 4-7 of row n + h (immediates, for
			 * clang) */
			__m512i w0 = h ? _mm512_shuffle_i64x2(r[0], r[1], 0xee)
				       : _mm512_shuffle_i64x2(r[0], r[1], 0x44);
			__m512i w1 = h ? _mm512_shuffle_i64x2(r[2], r[3], 0xee)
				       : _mm512_shuffle_i64x2(r[2], r[3], 0x44);
			__m512i w2 = h ? _mm512_shuffle_i64x2(r[4], r[5], 0xee)
				       : _mm512_shuffle_i64x2(r[4], r[5], 0x44);
			__m512i w3 = h ? _mm512_shuffle_i64x2(r[6], r[7], 0xee)
				       : _mm512_shuffle_i64x2(r[6], r[7], 0x44);
			const __m512i *ir = h ? idx_r1 : idx_r;

			for (int j = 0; j < 4; j++)
				_mm512_storeu_si512(x + 64 * j,
						    td512_piece(t, idx, ir, j,
								w0, w1, w2, w3,
								r[8], isz));
			_mm256_storeu_si256((__m256i *)(x + 256),
					    _mm512_castsi512_si256(td512_piece(
						    t, idx, ir, 4, w0, w1, w2,
						    w3, r[8], isz)));
		}
	}
}

TD_AVX512VBMI TD_ALWAYS_INLINE void td512_perm_pairs(char *st, size_t pitch,
						     char *pl, size_t n_pitch,
						     uint64_t npairs, bool pack,
						     size_t isz)
{
	const struct td_perm9 *t = &td_perm9_tab[isz - 1][pack];
	__m512i idx[5], idx_r[5], idx_r1[5];

	for (int j = 0; j < 5; j++) {
		idx[j] = _mm512_load_si512(t->idx[j]);
		idx_r[j] = _mm512_load_si512(t->idx_r[j]);
		idx_r1[j] = _mm512_load_si512(t->idx_r1[j]);
	}
	if (pack) {
		for (uint64_t p = 0; p < npairs; p += TD_FZ9_PASS / 2) {
			uint64_t n = npairs - p < TD_FZ9_PASS / 2
					     ? npairs - p
					     : TD_FZ9_PASS / 2;

			td512_perm_pack(st + p * 64, pitch,
					pl + 2 * p * n_pitch, n_pitch, n, t,
					idx, idx_r, 0, 2, isz);
			td512_perm_pack(st + p * 64, pitch,
					pl + 2 * p * n_pitch, n_pitch, n, t,
					idx, idx_r, 2, 5, isz);
		}
	} else {
		td512_perm_unpack(pl, n_pitch, st, pitch, npairs, t, idx, idx_r,
				  idx_r1, isz);
	}
}

TD_AVX512VBMI static void td512_pairs_1(char *st, size_t pitch, char *pl,
					size_t n_pitch, uint64_t npairs,
					bool pack)
{
	if (pack)
		td512_perm_pairs(st, pitch, pl, n_pitch, npairs, true, 1);
	else
		td512_perm_pairs(st, pitch, pl, n_pitch, npairs, false, 1);
}

TD_AVX512VBMI static void td512_pairs_2(char *st, size_t pitch, char *pl,
					size_t n_pitch, uint64_t npairs,
					bool pack)
{
	if (pack)
		td512_perm_pairs(st, pitch, pl, n_pitch, npairs, true, 2);
	else
		td512_perm_pairs(st, pitch, pl, n_pitch, npairs, false, 2);
}

/* Four 16-byte rows, one per 128-bit lane. */
TD_AVX512F TD_ALWAYS_INLINE __m512i td512_lanes(const char *a, const char *b,
						const char *c, const char *d)
{
	__m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const void *)a));

	v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)b), 1);
	v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)c), 2);
	return _mm512_inserti32x4(v, _mm_loadu_si128((const void *)d), 3);
}

/* 4 x 4 transposes of 32-bit elements in each 128-bit lane. */
TD_AVX512F TD_ALWAYS_INLINE void td512_transpose4(__m512i *v)
{
	__m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]);
	__m512i t1 = _mm512_unpackhi_epi32(v[0], v[1]);
	__m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]);
	__m512i t3 = _mm512_unpackhi_epi32(v[2], v[3]);

	v[0] = _mm512_unpacklo_epi64(t0, t2);
	v[1] = _mm512_unpackhi_epi64(t0, t2);
	v[2] = _mm512_unpacklo_epi64(t1, t3);
	v[3] = _mm512_unpackhi_epi64(t1, t3);
}

/*
 * f32 with AVX-512F: a storage row is 16 channels of one (h, w), 64
 * bytes. Packing loads 4 x 4 blocks of channels 0-3, 4-7, 8-11 and 12-15
 * into the 128-bit lanes and transposes them in the lanes; columns go
 * 0-3, 4-7 and 5-8 (of which only column 8 is kept). Groups g0 .. g1 - 1
 * of these.
 */
TD_AVX512F TD_ALWAYS_INLINE void td512_pack4(char *st, size_t pitch,
					     const char *b, int g0, int g1)
{
	static const int k0s[3] = {0, 4, 5};

	for (int g = g0; g < g1; g++) {
		__m512i v[4];

		for (int r = 0; r < 4; r++) {
			const char *x = b + (9 * r + k0s[g]) * 4;

			v[r] = td512_lanes(x, x + 4 * 36, x + 8 * 36,
					   x + 12 * 36);
		}
		td512_transpose4(v);
		if (g == 2) {
			_mm512_storeu_si512(st + 8 * pitch, v[3]);
			continue;
		}
		for (int k = 0; k < 4; k++)
			_mm512_storeu_si512(st + (k0s[g] + k) * pitch, v[k]);
	}
}

/*
 * f32 unpacking: the rows (k 0-7) are first permuted so that lane l holds
 * channels l, l + 4, l + 8, l + 12; the in-lane transposes then leave
 * channels 4 i .. 4 i + 3 (k 0-3 and 4-7) in v[i] and v[4 + i]. Each 64-byte
 * run of the block spans at most two such groups of four channels: one
 * or two 2-register permutes, and column 8 merged from row 8.
 */
TD_AVX512F TD_ALWAYS_INLINE void td512_unpack4(char *b, const char *st,
					       size_t pitch, __m512i pre)
{
	const struct td_unpack4 *t = &td_unpack4_tab;
	__m512i v[8], r8 = _mm512_loadu_si512(st + 8 * pitch);

	for (int k = 0; k < 8; k++)
		v[k] = _mm512_permutexvar_epi32(
			pre, _mm512_loadu_si512(st + k * pitch));
	td512_transpose4(v);
	td512_transpose4(v + 4);
	for (int j = 0; j < 9; j++) {
		const int i0 = 16 * j / 9 / 4, i1 = (16 * j + 15) / 9 / 4;
		__m512i idx = _mm512_load_si512(t->idx[j]);
		__m512i o = _mm512_permutex2var_epi32(v[i0], idx, v[4 + i0]);

		if (i1 != i0)
			o = _mm512_mask_blend_epi32(
				t->hi[j], o,
				_mm512_permutex2var_epi32(v[i1], idx,
							  v[4 + i1]));
		_mm512_storeu_si512(
			b + 64 * j,
			_mm512_mask_permutexvar_epi32(o, t->col8[j], idx, r8));
	}
}

TD_AVX512F static void td512_pairs_4(char *st, size_t pitch, char *pl,
				     size_t n_pitch, uint64_t npairs, bool pack)
{
	if (!pack) {
		/* lane l, element e: channel 4 e + l */
		const __m512i pre = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2,
						     13, 9, 5, 1, 12, 8, 4, 0);

		for (uint64_t r = 0; r < 2 * npairs; r++)
			td512_unpack4(pl + r * n_pitch, st + r * 64, pitch,
				      pre);
		return;
	}
	/* stacks 0-3, then 4-8 (see above td_fz9_walk) */
	for (uint64_t r0 = 0; r0 < 2 * npairs; r0 += TD_FZ9_PASS / 2) {
		uint64_t r1 = 2 * npairs - r0 < TD_FZ9_PASS / 2
				      ? 2 * npairs
				      : r0 + TD_FZ9_PASS / 2;

		for (uint64_t r = r0; r < r1; r++)
			td512_pack4(st + r * 64, pitch, pl + r * n_pitch, 0, 1);
		for (uint64_t r = r0; r < r1; r++)
			td512_pack4(st + r * 64, pitch, pl + r * n_pitch, 1, 3);
	}
}

/*
 * AVX2: 16-byte rows of the block (or 32-byte storage rows) in the two
 * 128-bit lanes of a register, then the B x B transposes of
 * td_transpose_1/2/4 (B = 16 / itemsize) in both lanes at once. Column 8
 * does not fit the f16 and f32 transposes: packing takes it from a second
 * set of rows shifted by one column, unpacking merges it into the stores
 * (f16) or writes it element by element (f32).
 */
TD_AVX2 TD_ALWAYS_INLINE __m256i td256_load2(const char *lo, const char *hi)
{
	return _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_loadu_si128((const void *)lo)),
		_mm_loadu_si128((const void *)hi), 1);
}

/* B x B transposes (B = 16 / isz) in each 128-bit lane of v[0 .. B-1]:
 * the network of td_transpose_1/2/4. Outputs nobody uses are dropped by
 * the compiler. */
TD_AVX2 TD_ALWAYS_INLINE void td256_transpose(__m256i *v, size_t isz)
{
	const size_t b = 16 / isz;
	__m256i t[16];

	for (size_t w = 1; w < b; w *= 2) {
		for (size_t i = 0; i < b / 2; i++) {
			__m256i x = v[i], y = v[i + b / 2];

			if (isz == 1) {
				t[2 * i] = _mm256_unpacklo_epi8(x, y);
				t[2 * i + 1] = _mm256_unpackhi_epi8(x, y);
			} else if (isz == 2) {
				t[2 * i] = _mm256_unpacklo_epi16(x, y);
				t[2 * i + 1] = _mm256_unpackhi_epi16(x, y);
			} else {
				t[2 * i] = _mm256_unpacklo_epi32(x, y);
				t[2 * i + 1] = _mm256_unpackhi_epi32(x, y);
			}
		}
		for (size_t i = 0; i < b; i++)
			v[i] = t[i];
	}
}

/* Storage rows [k0, k1) of one weight row n (block b) into st, rows 4-8
 * of f16 and int8 into hi (32 bytes apart) instead. */
TD_AVX2 TD_ALWAYS_INLINE void td256_pack(char *st, size_t pitch, const char *b,
					 int k0, int k1, char *hi, size_t isz)
{
	__m256i v[16];

	if (isz == 1) {
		/* lanes: channels r and 16 + r, all 9 columns; the last
		 * rows are loaded 7 bytes early so as not to read past the
		 * block, and shifted back */
		for (int r = 0; r < 15; r++)
			v[r] = td256_load2(b + 9 * r, b + 9 * (16 + r));
		v[15] = _mm256_bsrli_epi128(
			td256_load2(b + 9 * 15 - 7, b + 9 * 31 - 7), 7);
		td256_transpose(v, 1);
		for (int k = k0; k < k1; k++)
			_mm256_storeu_si256(
				(__m256i *)(k < 4 ? st + k * pitch
						  : hi + (k - 4) * 32),
				v[k]);
	} else if (isz == 2) {
		/* lanes: channels r and 8 + r, columns 0-7, then 1-8 */
		for (int g = k0 < 8 ? 0 : 1; g < 2 && (g == 0 || k1 == 9);
		     g++) {
			for (int r = 0; r < 8; r++)
				v[r] = td256_load2(b + 18 * r + 2 * g,
						   b + 18 * (8 + r) + 2 * g);
			td256_transpose(v, 2);
			if (g) {
				_mm256_storeu_si256((__m256i *)(hi + 4 * 32),
						    v[7]);
				continue;
			}
			for (int k = k0; k < k1 && k < 8; k++)
				_mm256_storeu_si256(
					(__m256i *)(k < 4 ? st + k * pitch
							  : hi + (k - 4) * 32),
					v[k]);
		}
	} else {
		/* per half h of the channels, lanes: channels 8 h + r and
		 * 8 h + 4 + r, columns 0-3, 4-7, then 5-8 */
		static const int g0s[3] = {0, 4, 5};

		for (int h = 0; h < 2; h++) {
			for (int g = 0; g < 3; g++) {
				const int c0 = g0s[g];

				if (c0 + 4 <= k0 || (g < 2 && c0 >= k1) ||
				    (g == 2 && k1 < 9))
					continue;
				for (int r = 0; r < 4; r++) {
					const char *x =
						b + (9 * (8 * h + r) + c0) * 4;

					v[r] = td256_load2(x, x + 4 * 36);
				}
				td256_transpose(v, 4);
				if (g == 2) {
					_mm256_storeu_si256(
						(__m256i *)(st + 8 * pitch +
							    32 * h),
						v[3]);
					continue;
				}
				for (int k = 0; k < 4; k++)
					_mm256_storeu_si256(
						(__m256i *)(st +
							    (c0 + k) * pitch +
							    32 * h),
						v[k]);
			}
		}
	}
}

/* Weight row n (block b) from its nine storage rows at st. */
TD_AVX2 TD_ALWAYS_INLINE void td256_unpack(char *b, const char *st,
					   size_t pitch, size_t isz)
{
	__m256i v[16];

	if (isz == 1) {
		__m256i r8 =
			_mm256_loadu_si256((const __m256i *)(st + 8 * pitch));

		/* three stages on rows 0-7 leave lane l of v[j] = channels
		 * 16 l + 2 j and 16 l + 2 j + 1, columns 0-7 each; column
		 * 8 joins them as the high half of each channel's 16 bytes
		 * (7 zero bytes after its 9, which the next channel's store
		 * overwrites: stores go in channel order, the last channel
		 * as 8 + 1 bytes) */
		for (int k = 0; k < 8; k++)
			v[k] = _mm256_loadu_si256(
				(const __m256i *)(st + k * pitch));
		for (int w = 0; w < 3; w++) {
			__m256i t[8];

			for (int i = 0; i < 4; i++) {
				t[2 * i] = _mm256_unpacklo_epi8(v[i], v[i + 4]);
				t[2 * i + 1] =
					_mm256_unpackhi_epi8(v[i], v[i + 4]);
			}
			for (int i = 0; i < 8; i++)
				v[i] = t[i];
		}
		for (int j = 7; j >= 0; j--) {
			const char a = (char)(2 * j), z = (char)-1;
			__m256i c8 = _mm256_shuffle_epi8(
				r8, _mm256_setr_epi8(a, z, z, z, z, z, z, z,
						     (char)(a + 1), z, z, z, z,
						     z, z, z, a, z, z, z, z, z,
						     z, z, (char)(a + 1), z, z,
						     z, z, z, z, z));

			v[2 * j + 1] = _mm256_unpackhi_epi64(v[j], c8);
			v[2 * j] = _mm256_unpacklo_epi64(v[j], c8);
		}
		for (int i = 0; i < 16; i++)
			_mm_storeu_si128((void *)(b + 9 * i),
					 _mm256_castsi256_si128(v[i]));
		for (int i = 0; i < 15; i++)
			_mm_storeu_si128((void *)(b + 9 * (16 + i)),
					 _mm256_extracti128_si256(v[i], 1));
		__m128i last = _mm256_extracti128_si256(v[15], 1);

		_mm_storel_epi64((void *)(b + 9 * 31), last);
		b[9 * 31 + 8] = (char)_mm_extract_epi8(last, 8);
	} else if (isz == 2) {
		__m256i r8 =
			_mm256_loadu_si256((const __m256i *)(st + 8 * pitch));
		/* column 8 of channels 0-7 and 8-15, in both lanes */
		const __m256i c8[2] = {_mm256_permute2x128_si256(r8, r8, 0x00),
				       _mm256_permute2x128_si256(r8, r8, 0x11)};

		for (int k = 0; k < 8; k++)
			v[k] = _mm256_loadu_si256(
				(const __m256i *)(st + k * pitch));
		td256_transpose(v, 2);
		/* lane l of v[i]: channel 8 l + i, columns 0-7. A channel
		 * is 18 bytes: 32-byte stores with column 8 in the high
		 * lane, in channel order so that each overwrites the
		 * surplus of the one before; the last one in two parts */
		for (int c = 0; c < 16; c++) {
			const int i = c % 8, l = c / 8;
			__m256i x =
				l ? _mm256_permute2x128_si256(v[i], v[i], 0x11)
				  : v[i];
			__m256i k8 = _mm256_shuffle_epi8(
				c8[l], _mm256_set1_epi16(
					       (short)(0x0202 * i + 0x0100)));

			if (c == 15) {
				_mm_storeu_si128((void *)(b + 18 * c),
						 _mm256_castsi256_si128(x));
				uint16_t e =
					(uint16_t)_mm256_extract_epi16(k8, 0);

				memcpy(b + 18 * c + 16, &e, 2);
				continue;
			}
			_mm256_storeu_si256((__m256i *)(b + 18 * c),
					    _mm256_blend_epi32(x, k8, 0xf0));
		}
	} else {
		uint32_t e[16];

		for (int h = 0; h < 2; h++) {
			__m256i w[4];

			for (int k = 0; k < 4; k++) {
				v[k] = _mm256_loadu_si256(
					(const __m256i *)(st + k * pitch +
							  32 * h));
				w[k] = _mm256_loadu_si256(
					(const __m256i *)(st + (4 + k) * pitch +
							  32 * h));
			}
			td256_transpose(v, 4);
			td256_transpose(w, 4);
			/* lane l of v[i] (columns 0-3) and w[i] (4-7):
			 * channel 8 h + 4 l + i */
			for (int i = 0; i < 4; i++) {
				char *x = b + 9 * (8 * h + i) * 4;

				_mm256_storeu_si256((__m256i *)x,
						    _mm256_permute2x128_si256(
							    v[i], w[i], 0x20));
				_mm256_storeu_si256((__m256i *)(x + 4 * 36),
						    _mm256_permute2x128_si256(
							    v[i], w[i], 0x31));
			}
			_mm256_storeu_si256(
				(__m256i *)(e + 8 * h),
				_mm256_loadu_si256((const __m256i *)(st +
								     8 * pitch +
								     32 * h)));
		}
		for (int c = 0; c < 16; c++)
			memcpy(b + (9 * c + 8) * 4, &e[c], 4);
	}
}

/*
 * Row pairs as rows. Packing writes stacks 0-3 first, then 4-8 (see the
 * comment above td_fz9_walk): f32 computes them apart (columns 0-3 and
 * 4-8 are separate transposes), f16 and int8 keep rows 4-8 in L1 until
 * the second pass, as their transposes make all nine rows at once.
 */
TD_AVX2 TD_ALWAYS_INLINE void td256_pairs(char *st, size_t pitch, char *pl,
					  size_t n_pitch, uint64_t npairs,
					  bool pack, size_t isz)
{
	const size_t row_bytes = isz == 4 ? 64 : 32;
	const uint64_t pass = isz == 4 ? TD_FZ9_PASS / 2 : TD_FZ9_PASS;
	_Alignas(32) char hi[TD_FZ9_PASS][5][32];

	if (!pack) {
		for (uint64_t r = 0; r < 2 * npairs; r++)
			td256_unpack(pl + r * n_pitch, st + r * row_bytes,
				     pitch, isz);
		return;
	}
	for (uint64_t r0 = 0; r0 < 2 * npairs; r0 += pass) {
		uint64_t r1 = 2 * npairs - r0 < pass ? 2 * npairs : r0 + pass;

		if (isz == 4) {
			for (uint64_t r = r0; r < r1; r++)
				td256_pack(st + r * row_bytes, pitch,
					   pl + r * n_pitch, 0, 4, NULL, isz);
			for (uint64_t r = r0; r < r1; r++)
				td256_pack(st + r * row_bytes, pitch,
					   pl + r * n_pitch, 4, 9, NULL, isz);
			continue;
		}
		for (uint64_t r = r0; r < r1; r++)
			td256_pack(st + r * row_bytes, pitch, pl + r * n_pitch,
				   0, 9, hi[r - r0][0], isz);
		for (uint64_t r = r0; r < r1; r++)
			for (int k = 0; k < 5; k++)
				_mm256_storeu_si256(
					(__m256i *)(st + r * row_bytes +
						    (4 + k) * pitch),
					_mm256_load_si256((
						const __m256i *)hi[r - r0][k]));
	}
}

TD_AVX2 static void td256_pairs_1(char *st, size_t pitch, char *pl,
				  size_t n_pitch, uint64_t npairs, bool pack)
{
	td256_pairs(st, pitch, pl, n_pitch, npairs, pack, 1);
}

TD_AVX2 static void td256_pairs_2(char *st, size_t pitch, char *pl,
				  size_t n_pitch, uint64_t npairs, bool pack)
{
	td256_pairs(st, pitch, pl, n_pitch, npairs, pack, 2);
}

TD_AVX2 static void td256_pairs_4(char *st, size_t pitch, char *pl,
				  size_t n_pitch, uint64_t npairs, bool pack)
{
	td256_pairs(st, pitch, pl, n_pitch, npairs, pack, 4);
}

/* The vector routine for 3x3 kernels of this plan, if the CPU (within
 * the limit set for tests) has one. */
static td_fz9_pairs_fn td_fz9_pick(const struct td_fz_plan *f, size_t isz)
{
	uint32_t limit = td_isa_limit;

	if (f->hw != 9 || f->c_stride != 9)
		return NULL;
	__builtin_cpu_init();
	if (limit >= VNPU_TD_ISA_AVX512 && __builtin_cpu_supports("avx512f")) {
		pthread_once(&td_tab_once, td_tab_init);
		if (isz == 4)
			return td512_pairs_4;
		if (__builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vbmi"))
			return isz == 1 ? td512_pairs_1 : td512_pairs_2;
	}
	if (limit >= VNPU_TD_ISA_AVX2 && __builtin_cpu_supports("avx2"))
		return isz == 1	  ? td256_pairs_1
		       : isz == 2 ? td256_pairs_2
				  : td256_pairs_4;
	return NULL;
}
#endif /* TD_X86 */

uint32_t vnpu_transdata_set_isa(uint32_t isa)
{
	td_isa_limit = isa == VNPU_TD_ISA_AUTO || isa > VNPU_TD_ISA_AVX512
			       ? VNPU_TD_ISA_AVX512
			       : isa;
#ifdef TD_X86
	__builtin_cpu_init();
	if (td_isa_limit >= VNPU_TD_ISA_AVX512 &&
	    __builtin_cpu_supports("avx512f"))
		return VNPU_TD_ISA_AVX512;
	if (td_isa_limit >= VNPU_TD_ISA_AVX2 && __builtin_cpu_supports("avx2"))
		return VNPU_TD_ISA_AVX2;
#endif
	return VNPU_TD_ISA_PORTABLE;
}

static void td_run_internal(const struct vnpu_kp_transdata *kp,
			    const struct vnpu_kbuf *bufs, uint32_t block,
			    uint32_t nblocks)
{
	bool pack = vnpu_format_is_internal(kp->out.format);
	const struct vnpu_tensor *pl = pack ? &kp->src : &kp->out;
	const struct vnpu_tensor *in = pack ? &kp->out : &kp->src;
	char *pl_base = bufs[pl->buffer].ptr;
	char *st_base = vnpu_tensor_data(in, bufs);
	struct td_plan plan;
	struct td_fz_plan fz;
	uint64_t tiles, begin, end;

	/* the plain side's offset is its tiles' origin */
	pl_base += (uint64_t)pl->offset * vnpu_dtype_size(pl->dtype);
	if (td_fz_plan_build(&fz, pl, in)) {
		size_t isz = vnpu_dtype_size(pl->dtype);

		vnpu_block_range(fz.c1 * fz.n1, block, nblocks, &begin, &end);
#ifdef TD_X86
		td_fz9_pairs_fn pairs = td_fz9_pick(&fz, isz);

		if (pairs) {
			td_fz9_walk(&fz, st_base, pl_base, pack, begin, end,
				    isz,
				    isz == 1   ? td_fz_rows_1
				    : isz == 2 ? td_fz_rows_2
					       : td_fz_rows_4,
				    pairs);
			return;
		}
#endif
		switch (isz) {
		case 1:
			td_fz_walk_1(&fz, st_base, pl_base, pack, begin, end);
			break;
		case 2:
			td_fz_walk_2(&fz, st_base, pl_base, pack, begin, end);
			break;
		default:
			td_fz_walk_4(&fz, st_base, pl_base, pack, begin, end);
			break;
		}
		return;
	}
	tiles = td_plan_build(&plan, pl, in);
	vnpu_block_range(tiles, block, nblocks, &begin, &end);
	switch (vnpu_dtype_size(pl->dtype)) {
	case 1:
		td_walk_1(&plan, st_base, pl_base, pack, begin, end);
		break;
	case 2:
		td_walk_2(&plan, st_base, pl_base, pack, begin, end);
		break;
	default:
		td_walk_4(&plan, st_base, pl_base, pack, begin, end);
		break;
	}
}

/*
 * Plain -> plain: a strided copy in the output's memory order. Dims are
 * sorted by output stride (largest first), size-1 dims dropped and
 * neighbours merged where both sides allow; blocks split the rows (all
 * dims but the innermost).
 */
struct td_copy_plan {
	uint32_t ndim;
	uint64_t sizes[VNPU_MAX_DIMS];
	uint64_t src_strides[VNPU_MAX_DIMS];
	uint64_t out_strides[VNPU_MAX_DIMS];
};

static void td_copy_plan_build(struct td_copy_plan *cp,
			       const struct vnpu_tensor *src,
			       const struct vnpu_tensor *out)
{
	uint32_t order[VNPU_MAX_DIMS], n = 0;

	for (uint32_t i = 0; i < out->ndim; i++) {
		uint32_t j = n;

		if (out->sizes[i] == 1)
			continue;
		while (j > 0 && out->strides[order[j - 1]] < out->strides[i]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
		n++;
	}
	cp->ndim = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t d = order[k];
		uint64_t size = (uint64_t)out->sizes[d];
		uint64_t ss = (uint64_t)src->strides[d];
		uint64_t os = (uint64_t)out->strides[d];
		uint32_t last = cp->ndim - 1;

		if (cp->ndim > 0 && cp->src_strides[last] == size * ss &&
		    cp->out_strides[last] == size * os) {
			cp->sizes[last] *= size;
			cp->src_strides[last] = ss;
			cp->out_strides[last] = os;
			continue;
		}
		cp->sizes[cp->ndim] = size;
		cp->src_strides[cp->ndim] = ss;
		cp->out_strides[cp->ndim] = os;
		cp->ndim++;
	}
	if (cp->ndim == 0) { /* a single element */
		cp->sizes[0] = 1;
		cp->src_strides[0] = 1;
		cp->out_strides[0] = 1;
		cp->ndim = 1;
	}
}

/* Elements of one row copied between two polls of the cancellation
 * hook. */
#define TD_ROW_SEGMENT (1ull << 16)

TD_ALWAYS_INLINE void td_copy_rows(const struct td_copy_plan *cp, char *dst,
				   const char *src, uint64_t begin,
				   uint64_t end, size_t isz)
{
	uint32_t inner = cp->ndim - 1;
	uint64_t n = cp->sizes[inner];
	size_t ss = cp->src_strides[inner] * isz;
	size_t os = cp->out_strides[inner] * isz;
	uint64_t idx[VNPU_MAX_DIMS];
	uint64_t so = 0, oo = 0, rem = begin, work = 0;

	for (uint32_t d = inner; d-- > 0;) {
		idx[d] = rem % cp->sizes[d];
		rem /= cp->sizes[d];
		so += idx[d] * cp->src_strides[d];
		oo += idx[d] * cp->out_strides[d];
	}
	for (uint64_t row = begin; row < end; row++) {
		const char *s = src + so * isz;
		char *d = dst + oo * isz;

		/* in segments: a row may be most of the tensor, and the
		 * cancellation hook is polled between them */
		for (uint64_t i0 = 0; i0 < n; i0 += TD_ROW_SEGMENT) {
			uint64_t m = n - i0 < TD_ROW_SEGMENT ? n - i0
							     : TD_ROW_SEGMENT;

			if (vnpu_kernel_poll(&work, m + 1))
				return;
			if (ss == isz && os == isz)
				memcpy(d + i0 * isz, s + i0 * isz, m * isz);
			else
				for (uint64_t i = i0; i < i0 + m; i++)
					memcpy(d + i * os, s + i * ss, isz);
		}

		for (uint32_t k = inner; k-- > 0;) {
			so += cp->src_strides[k];
			oo += cp->out_strides[k];
			if (++idx[k] < cp->sizes[k])
				break;
			so -= cp->sizes[k] * cp->src_strides[k];
			oo -= cp->sizes[k] * cp->out_strides[k];
			idx[k] = 0;
		}
	}
}

/*
 * Plain -> plain where the copy is a transpose of two dim groups: the
 * output's innermost dim b (output stride 1) is strided in the source,
 * and another dim a has source stride 1 (NCHW <-> NHWC: C against H*W).
 * The (a, b) plane is cut into tiles that stay in L1 while they are
 * transposed; the work unit is one tile of one index of the other
 * ("batch") dims, which covers a disjoint set of output elements.
 * Units run in the copy plan's order with b's tiles innermost, so the
 * output is written roughly in memory order.
 */
/*
 * Tile sides, in bytes of one row's run. Each side's rows are memory
 * streams: a side whose rows lie far apart (NCHW's channel planes) gets
 * few rows per tile, so that few streams are open at once and the
 * prefetcher keeps up, and the other side then gets long runs. The
 * transpose itself keeps only a few lines per row in L1 (see
 * td_transpose_block), so long runs cost no cache. Measured on
 * [32,64,56,56] f16/f32/int8 NCHW <-> NHWC against square 64..256-byte
 * tiles: ~0.40x -> ~0.55x of memcpy for NCHW -> NHWC.
 */
#define TD_TILE_FAR_ROWS  64   /* bytes: 16 f32, 32 f16, 64 int8 rows */
#define TD_TILE_NEAR_ROWS 8192 /* bytes: the long runs */
#define TD_FAR_ROW_BYTES  1024 /* row pitch from which rows are "far" */

struct td_transpose_plan {
	uint32_t nunit; /* unit dims: batch dims, a's tiles, b's tiles */
	uint32_t a_dim; /* unit dim of a's tiles (b's is the last) */
	uint64_t size_a, size_b, tile_a, tile_b;
	uint64_t src_stride_b, out_stride_a; /* elements */
	uint64_t extent[VNPU_MAX_DIMS];
	uint64_t src_stride[VNPU_MAX_DIMS]; /* elements per unit step */
	uint64_t out_stride[VNPU_MAX_DIMS];
};

static bool td_transpose_plan_build(struct td_transpose_plan *tp,
				    const struct td_copy_plan *cp, size_t isz)
{
	uint32_t b = cp->ndim - 1, a = cp->ndim;

	if (isz > 4 || cp->ndim < 2 || cp->out_strides[b] != 1 ||
	    cp->src_strides[b] == 1)
		return false;
	for (uint32_t d = 0; d < b && a == cp->ndim; d++)
		if (cp->src_strides[d] == 1)
			a = d;
	if (a == cp->ndim)
		return false;
	tp->tile_a = (cp->out_strides[a] * isz >= TD_FAR_ROW_BYTES
			      ? TD_TILE_FAR_ROWS
			      : TD_TILE_NEAR_ROWS) /
		     isz;
	tp->tile_b = (cp->src_strides[b] * isz >= TD_FAR_ROW_BYTES
			      ? TD_TILE_FAR_ROWS
			      : TD_TILE_NEAR_ROWS) /
		     isz;
	tp->size_a = cp->sizes[a];
	tp->size_b = cp->sizes[b];
	tp->src_stride_b = cp->src_strides[b];
	tp->out_stride_a = cp->out_strides[a];
	tp->nunit = 0;
	for (uint32_t d = 0; d < cp->ndim; d++) {
		uint32_t u = tp->nunit++;

		if (d == a || d == b) {
			uint64_t tile = d == a ? tp->tile_a : tp->tile_b;

			tp->extent[u] = vnpu_ceil_div(cp->sizes[d], tile);
			tp->src_stride[u] = tile * cp->src_strides[d];
			tp->out_stride[u] = tile * cp->out_strides[d];
			if (d == a)
				tp->a_dim = u;
		} else {
			tp->extent[u] = cp->sizes[d];
			tp->src_stride[u] = cp->src_strides[d];
			tp->out_stride[u] = cp->out_strides[d];
		}
	}
	return true;
}

TD_ALWAYS_INLINE void td_transpose_units(const struct td_transpose_plan *tp,
					 char *dst, const char *src,
					 uint64_t begin, uint64_t end,
					 size_t isz)
{
	const uint32_t b_dim = tp->nunit - 1;
	uint64_t idx[VNPU_MAX_DIMS];
	uint64_t so = 0, oo = 0, rem = begin, work = 0;

	for (uint32_t d = tp->nunit; d-- > 0;) {
		idx[d] = rem % tp->extent[d];
		rem /= tp->extent[d];
		so += idx[d] * tp->src_stride[d];
		oo += idx[d] * tp->out_stride[d];
	}
	for (uint64_t unit = begin; unit < end; unit++) {
		uint64_t na = tp->size_a - idx[tp->a_dim] * tp->tile_a;
		uint64_t nb = tp->size_b - idx[b_dim] * tp->tile_b;

		na = na < tp->tile_a ? na : tp->tile_a;
		nb = nb < tp->tile_b ? nb : tp->tile_b;
		if (vnpu_kernel_poll(&work, na * nb))
			return;
		/* source rows run along b, output rows along a */
		td_transpose_block(dst + oo * isz, tp->out_stride_a * isz,
				   src + so * isz, tp->src_stride_b * isz, nb,
				   na, isz);

		for (uint32_t k = tp->nunit; k-- > 0;) {
			so += tp->src_stride[k];
			oo += tp->out_stride[k];
			if (++idx[k] < tp->extent[k])
				break;
			so -= tp->extent[k] * tp->src_stride[k];
			oo -= tp->extent[k] * tp->out_stride[k];
			idx[k] = 0;
		}
	}
}

static void td_run_transpose(const struct td_transpose_plan *tp, char *dst,
			     const char *src, uint32_t block, uint32_t nblocks,
			     size_t isz)
{
	uint64_t units = 1, begin, end;

	for (uint32_t d = 0; d < tp->nunit; d++)
		units *= tp->extent[d];
	vnpu_block_range(units, block, nblocks, &begin, &end);
	switch (isz) {
	case 1:
		td_transpose_units(tp, dst, src, begin, end, 1);
		break;
	case 2:
		td_transpose_units(tp, dst, src, begin, end, 2);
		break;
	default:
		td_transpose_units(tp, dst, src, begin, end, 4);
		break;
	}
}

static void td_run_plain(const struct vnpu_kp_transdata *kp,
			 const struct vnpu_kbuf *bufs, uint32_t block,
			 uint32_t nblocks)
{
	struct td_copy_plan cp;
	struct td_transpose_plan tp;
	size_t isz = vnpu_dtype_size(kp->out.dtype);
	uint64_t rows = 1, begin, end;
	char *dst = vnpu_tensor_data(&kp->out, bufs);
	const char *src = vnpu_tensor_data(&kp->src, bufs);

	td_copy_plan_build(&cp, &kp->src, &kp->out);
	if (td_transpose_plan_build(&tp, &cp, isz)) {
		td_run_transpose(&tp, dst, src, block, nblocks, isz);
		return;
	}
	for (uint32_t d = 0; d + 1 < cp.ndim; d++)
		rows *= cp.sizes[d];
	vnpu_block_range(rows, block, nblocks, &begin, &end);
	switch (vnpu_dtype_size(kp->out.dtype)) {
	case 1:
		td_copy_rows(&cp, dst, src, begin, end, 1);
		break;
	case 2:
		td_copy_rows(&cp, dst, src, begin, end, 2);
		break;
	case 4:
		td_copy_rows(&cp, dst, src, begin, end, 4);
		break;
	default:
		td_copy_rows(&cp, dst, src, begin, end, 8);
		break;
	}
}

static void td_run(const void *params, const struct vnpu_kbuf *bufs,
		   uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_transdata *kp = params;
	uint64_t numel;

	if (!vnpu_tensor_numel(&kp->out, &numel) || numel == 0)
		return;
	if (vnpu_format_is_internal(kp->src.format) ||
	    vnpu_format_is_internal(kp->out.format))
		td_run_internal(kp, bufs, block, nblocks);
	else
		td_run_plain(kp, bufs, block, nblocks);
}

/* [*lo, *hi) byte range a checked tensor can touch in its buffer. */
static void td_byte_range(const struct vnpu_tensor *t, uint64_t *lo,
			  uint64_t *hi)
{
	uint64_t isz = vnpu_dtype_size(t->dtype), extent = 1;

	if (vnpu_format_is_internal(t->format)) {
		vnpu_storage_numel(t, &extent);
	} else {
		for (uint32_t i = 0; i < t->ndim; i++)
			extent += (uint64_t)(t->sizes[i] - 1) *
				  (uint64_t)t->strides[i];
	}
	*lo = (uint64_t)t->offset * isz;
	*hi = *lo + extent * isz;
}

static uint32_t td_validate(const void *params, const struct vnpu_kbuf *bufs,
			    uint32_t nbufs)
{
	const struct vnpu_kp_transdata *kp = params;
	const struct vnpu_tensor *src = &kp->src, *out = &kp->out;
	bool src_internal = vnpu_format_is_internal(src->format);
	bool out_internal = vnpu_format_is_internal(out->format);
	uint64_t numel, slo, shi, olo, ohi;
	uint32_t st;

	/* 8-byte elements have no fractal geometry */
	if ((src_internal && vnpu_dtype_size(src->dtype) == 8) ||
	    (out_internal && vnpu_dtype_size(out->dtype) == 8))
		return VNPU_STATUS_UNSUPPORTED;
	st = vnpu_tensor_check(src, bufs, nbufs, VNPU_ACCESS_READ);
	if (st != VNPU_STATUS_OK)
		return st;
	st = vnpu_tensor_check(out, bufs, nbufs, VNPU_ACCESS_WRITE);
	if (st != VNPU_STATUS_OK)
		return st;
	if (src->dtype != out->dtype || src->ndim != out->ndim)
		return VNPU_STATUS_INVALID_ARGS;
	for (uint32_t i = 0; i < src->ndim; i++)
		if (src->sizes[i] != out->sizes[i])
			return VNPU_STATUS_INVALID_ARGS;
	/* between internal formats torch_npu goes through the base format */
	if (src_internal && out_internal)
		return VNPU_STATUS_UNSUPPORTED;
	if (!vnpu_tensor_is_injective(out))
		return VNPU_STATUS_INVALID_ARGS;
	vnpu_tensor_numel(out, &numel);
	if (numel == 0 || src->buffer != out->buffer)
		return VNPU_STATUS_OK;
	td_byte_range(src, &slo, &shi);
	td_byte_range(out, &olo, &ohi);
	if (slo < ohi && olo < shi)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

const struct vnpu_kernel_def vnpu_kernel_transdata = {
	.id = VNPU_KERNEL_TRANSDATA,
	.name = "transdata",
	.params_size = sizeof(struct vnpu_kp_transdata),
	.validate = td_validate,
	.run = td_run,
};
