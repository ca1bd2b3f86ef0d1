// SPDX-License-Identifier: MIT
/*
 * SCAN: inclusive prefix sums and products along one dim (cumsum,
 * cumprod). Each block owns a range of lines (positions of the other
 * dims); a line is folded in index order in PyTorch's CPU accumulation
 * type, read and written in chunks, so out may be input itself.
 */
#include <stdint.h>

#include "elementwise.h"

static uint32_t scan_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_scan *p = params;
	uint32_t st;

	if (p->op >= VNPU_SCAN_COUNT || p->reserved)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->input, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->dim >= p->input.ndim || p->input.dtype != p->out.dtype ||
	    !vnpu_same_shape(&p->input, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	return p->input.dtype == VNPU_DTYPE_BOOL ? VNPU_STATUS_UNSUPPORTED
						 : VNPU_STATUS_OK;
}

/* The running value of one line in the dtype's accumulation type. */
struct scan_acc {
	double d;   /* F32, F64 */
	float f;    /* F16, BF16 */
	uint64_t i; /* integers; wraps */
};

static void scan_chunk(uint32_t op, uint32_t dtype, struct scan_acc *acc,
		       const char *in, int64_t in_step, char *out,
		       int64_t out_step, int64_t n)
{
	bool sum = op == VNPU_SCAN_SUM;

	if (dtype == VNPU_DTYPE_F32 || dtype == VNPU_DTYPE_F64) {
		double x[VNPU_EW_CHUNK];

		vnpu_ew_load_f64(in, in_step, dtype, n, x);
		for (int64_t k = 0; k < n; k++) {
			acc->d = sum ? acc->d + x[k] : acc->d * x[k];
			x[k] = acc->d;
		}
		vnpu_ew_store_f64(out, out_step, dtype, n, x);
	} else if (vnpu_dtype_is_half(dtype)) {
		float x[VNPU_EW_CHUNK];

		vnpu_ew_load_f32(in, in_step, dtype, n, x);
		for (int64_t k = 0; k < n; k++) {
			acc->f = sum ? acc->f + x[k] : acc->f * x[k];
			x[k] = acc->f;
		}
		vnpu_ew_store_f32(out, out_step, dtype, n, x);
	} else {
		int64_t x[VNPU_EW_CHUNK];

		vnpu_ew_load_i64(in, in_step, dtype, n, x);
		for (int64_t k = 0; k < n; k++) {
			acc->i = sum ? acc->i + (uint64_t)x[k] :
				       acc->i * (uint64_t)x[k];
			x[k] = (int64_t)acc->i;
		}
		vnpu_ew_store_i64(out, out_step, dtype, n, x);
	}
}

/* One line (vnpu_line_fn). */
static bool scan_line(const void *params, const struct vnpu_line *l,
		      uint64_t *work)
{
	const struct vnpu_kp_scan *p = params;
	uint32_t itemsize = vnpu_dtype_size(l->dtype);
	double one = p->op == VNPU_SCAN_PROD;
	struct scan_acc acc = { .d = one, .f = (float)one, .i = (uint64_t)one };

	for (int64_t done = 0; done < l->len; done += VNPU_EW_CHUNK) {
		int64_t n = l->len - done < VNPU_EW_CHUNK ? l->len - done :
							    VNPU_EW_CHUNK;

		if (vnpu_kernel_poll(work, (uint64_t)n))
			return true;
		scan_chunk(p->op, l->dtype, &acc,
			   l->in + done * l->in_step * itemsize, l->in_step,
			   l->out + done * l->out_step * itemsize, l->out_step,
			   n);
	}
	return false;
}

static void scan_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_scan *p = params;

	vnpu_for_lines(&p->input, &p->out, p->dim, bufs, block, nblocks,
		       scan_line, p);
}

const struct vnpu_kernel_def vnpu_kernel_scan = {
	.id = VNPU_KERNEL_SCAN,
	.name = "scan",
	.params_size = sizeof(struct vnpu_kp_scan),
	.validate = scan_validate,
	.run = scan_run,
};
