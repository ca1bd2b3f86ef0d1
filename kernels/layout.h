/* SPDX-License-Identifier: MIT */
/*
 * Element mapping of the internal formats (docs/hw-spec.md, "Memory
 * formats"): where logical element (n, c, h, w) or (b, m, k) lives in the
 * packed storage. These formulas are the single definition used by
 * TransData, GEMM, conv2d and the tests' independent checks.
 */
#ifndef VNPU_KERNELS_LAYOUT_H
#define VNPU_KERNELS_LAYOUT_H

#include <stdint.h>

#include "dtype.h"
#include "kernel.h"

/* Geometry of a 4-D [N,C,H,W] tensor in NC1HWC0 or FRACTAL_Z. */
struct vnpu_nchw_geom {
	uint64_t n, c, h, w;
	uint64_t c0, c1;	/* C0 = VNPU_C0(itemsize), C1 = ceil(C/C0) */
	uint64_t n1;		/* ceil(N/16), FRACTAL_Z only */
};

/* Geometry of a [batch, M, K] matrix stack in FRACTAL_NZ. */
struct vnpu_nz_geom {
	uint64_t batch, m, k;
	uint64_t c0, k1, m1;	/* K1 = ceil(K/C0), M1 = ceil(M/16) */
};

static inline uint64_t vnpu_ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* From a checked descriptor (4-D logical sizes). */
static inline struct vnpu_nchw_geom vnpu_nchw_geom(const struct vnpu_tensor *t)
{
	struct vnpu_nchw_geom g;

	g.n = (uint64_t)t->sizes[0];
	g.c = (uint64_t)t->sizes[1];
	g.h = (uint64_t)t->sizes[2];
	g.w = (uint64_t)t->sizes[3];
	g.c0 = VNPU_C0(vnpu_dtype_size(t->dtype));
	g.c1 = vnpu_ceil_div(g.c, g.c0);
	g.n1 = vnpu_ceil_div(g.n, VNPU_CUBE_M0);
	return g;
}

/* From a checked descriptor of rank >= 2; leading dims fold into batch. */
static inline struct vnpu_nz_geom vnpu_nz_geom(const struct vnpu_tensor *t)
{
	struct vnpu_nz_geom g;

	g.batch = 1;
	for (uint32_t i = 0; i + 2 < t->ndim; i++)
		g.batch *= (uint64_t)t->sizes[i];
	g.m = (uint64_t)t->sizes[t->ndim - 2];
	g.k = (uint64_t)t->sizes[t->ndim - 1];
	g.c0 = VNPU_C0(vnpu_dtype_size(t->dtype));
	g.k1 = vnpu_ceil_div(g.k, g.c0);
	g.m1 = vnpu_ceil_div(g.m, VNPU_CUBE_M0);
	return g;
}

/* NC1HWC0: [N, C1, H, W, C0]. */
static inline uint64_t vnpu_nc1hwc0_index(const struct vnpu_nchw_geom *g,
					  uint64_t n, uint64_t c, uint64_t h,
					  uint64_t w)
{
	return (((n * g->c1 + c / g->c0) * g->h + h) * g->w + w) * g->c0 +
	       c % g->c0;
}

/* FRACTAL_Z: [C1*H*W, N1, 16, C0]; n is the fractal row, c the column. */
static inline uint64_t vnpu_fractal_z_index(const struct vnpu_nchw_geom *g,
					    uint64_t n, uint64_t c, uint64_t h,
					    uint64_t w)
{
	return (((((c / g->c0) * g->h + h) * g->w + w) * g->n1 + n / 16) * 16 +
		n % 16) * g->c0 + c % g->c0;
}

/* FRACTAL_NZ: [batch, K1, M1, 16, C0]; m is the fractal row, k the column. */
static inline uint64_t vnpu_fractal_nz_index(const struct vnpu_nz_geom *g,
					     uint64_t b, uint64_t m,
					     uint64_t k)
{
	return (((b * g->k1 + k / g->c0) * g->m1 + m / 16) * 16 + m % 16) *
		       g->c0 + k % g->c0;
}

/* Storage elements of each layout (what the buffer must hold). */
static inline uint64_t vnpu_nc1hwc0_numel(const struct vnpu_nchw_geom *g)
{
	return g->n * g->c1 * g->h * g->w * g->c0;
}

static inline uint64_t vnpu_fractal_z_numel(const struct vnpu_nchw_geom *g)
{
	return g->c1 * g->h * g->w * g->n1 * 16 * g->c0;
}

static inline uint64_t vnpu_fractal_nz_numel(const struct vnpu_nz_geom *g)
{
	return g->batch * g->k1 * g->m1 * 16 * g->c0;
}

/*
 * Instruction-set families of TransData's vector paths, for tests and
 * benchmarks that compare them; the default takes the best the CPU has.
 */
enum vnpu_td_isa {
	VNPU_TD_ISA_AUTO = 0,
	VNPU_TD_ISA_PORTABLE = 1,
	VNPU_TD_ISA_AVX2 = 2,
	VNPU_TD_ISA_AVX512 = 3,
};

/* Limits TransData's choice process-wide (not thread-safe: call it before
 * launching work). Returns the best family now allowed on this CPU. */
uint32_t vnpu_transdata_set_isa(uint32_t isa);

#endif /* VNPU_KERNELS_LAYOUT_H */
