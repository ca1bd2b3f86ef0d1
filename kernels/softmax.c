// SPDX-License-Identifier: MIT
/*
 * SOFTMAX and LOG_SOFTMAX along one dim of a plain strided tensor. Each
 * block owns a range of rows (positions of the other dims). A row is read
 * three times in chunks: its maximum, the sum of exp(x - max) in f64, then
 * the output, so no row buffer is needed and out may alias input.
 */
#include <math.h>
#include <stdint.h>

#include "elementwise.h"

static uint32_t softmax_validate(const void *params,
				 const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	const struct vnpu_kp_softmax *p = params;
	uint32_t st;

	if (p->log > 1) /* a flag: 0 or 1 */
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->input, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->dim >= p->input.ndim || p->input.dtype != p->out.dtype ||
	    !vnpu_same_shape(&p->input, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_dtype_is_float(p->input.dtype))
		return VNPU_STATUS_UNSUPPORTED;
	return VNPU_STATUS_OK;
}

/* One row (vnpu_line_fn). */
static bool softmax_row(const void *params, const struct vnpu_line *l,
			uint64_t *work)
{
	const struct vnpu_kp_softmax *p = params;
	float x[VNPU_EW_CHUNK];
	float max = -INFINITY;
	double sum = 0;
	float shift;
	int64_t n;

	for (int64_t done = 0; done < l->len; done += n) {
		n = vnpu_line_chunk_f32(l, done, work, x);
		if (!n)
			return true;
		for (int64_t i = 0; i < n; i++)
			if (x[i] > max || x[i] != x[i])
				max = x[i];
	}
	for (int64_t done = 0; done < l->len; done += n) {
		float part = 0;

		n = vnpu_line_chunk_f32(l, done, work, x);
		if (!n)
			return true;
		for (int64_t i = 0; i < n; i++)
			part += expf(x[i] - max);
		sum += part;
	}
	/* log-softmax: (x - max) - log(sum); softmax: exp(x - max) / sum */
	shift = p->log ? (float)log(sum) : (float)(1.0 / sum);
	for (int64_t done = 0; done < l->len; done += n) {
		n = vnpu_line_chunk_f32(l, done, work, x);
		if (!n)
			return true;
		if (p->log)
			for (int64_t i = 0; i < n; i++)
				x[i] = (x[i] - max) - shift;
		else
			for (int64_t i = 0; i < n; i++)
				x[i] = expf(x[i] - max) * shift;
		vnpu_ew_store_f32(l->out + done * l->out_step *
					      vnpu_dtype_size(l->dtype),
				  l->out_step, l->dtype, n, x);
	}
	return false;
}

static void softmax_run(const void *params, const struct vnpu_kbuf *bufs,
			uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_softmax *p = params;

	vnpu_for_lines(&p->input, &p->out, p->dim, bufs, block, nblocks,
		       softmax_row, p);
}

const struct vnpu_kernel_def vnpu_kernel_softmax = {
	.id = VNPU_KERNEL_SOFTMAX,
	.name = "softmax",
	.params_size = sizeof(struct vnpu_kp_softmax),
	.validate = softmax_validate,
	.run = softmax_run,
};
