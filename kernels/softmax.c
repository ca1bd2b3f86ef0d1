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

/* One row; true when the cancellation hook (polled through *work every
 * VNPU_KERNEL_POLL_WORK elements) stopped it. */
static bool softmax_row(const char *in, int64_t in_step, char *out,
			int64_t out_step, int64_t len, uint32_t dtype,
			bool log_out, uint64_t *work)
{
	uint32_t itemsize = vnpu_dtype_size(dtype);
	float x[VNPU_EW_CHUNK];
	float max = -INFINITY;
	double sum = 0;
	float shift;

	for (int64_t done = 0; done < len; done += VNPU_EW_CHUNK) {
		int64_t n =
			len - done < VNPU_EW_CHUNK ? len - done : VNPU_EW_CHUNK;

		if (vnpu_kernel_poll(work, (uint64_t)n))
			return true;
		vnpu_ew_load_f32(in + done * in_step * itemsize, in_step, dtype,
				 n, x);
		for (int64_t i = 0; i < n; i++)
			if (x[i] > max || x[i] != x[i])
				max = x[i];
	}
	for (int64_t done = 0; done < len; done += VNPU_EW_CHUNK) {
		int64_t n =
			len - done < VNPU_EW_CHUNK ? len - done : VNPU_EW_CHUNK;
		float part = 0;

		if (vnpu_kernel_poll(work, (uint64_t)n))
			return true;
		vnpu_ew_load_f32(in + done * in_step * itemsize, in_step, dtype,
				 n, x);
		for (int64_t i = 0; i < n; i++)
			part += expf(x[i] - max);
		sum += part;
	}
	/* log-softmax: (x - max) - log(sum); softmax: exp(x - max) / sum */
	shift = log_out ? (float)log(sum) : (float)(1.0 / sum);
	for (int64_t done = 0; done < len; done += VNPU_EW_CHUNK) {
		int64_t n =
			len - done < VNPU_EW_CHUNK ? len - done : VNPU_EW_CHUNK;

		if (vnpu_kernel_poll(work, (uint64_t)n))
			return true;
		vnpu_ew_load_f32(in + done * in_step * itemsize, in_step, dtype,
				 n, x);
		if (log_out)
			for (int64_t i = 0; i < n; i++)
				x[i] = (x[i] - max) - shift;
		else
			for (int64_t i = 0; i < n; i++)
				x[i] = expf(x[i] - max) * shift;
		vnpu_ew_store_f32(out + done * out_step * itemsize, out_step,
				  dtype, n, x);
	}
	return false;
}

static void softmax_run(const void *params, const struct vnpu_kbuf *bufs,
			uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_softmax *p = params;
	const struct vnpu_tensor *in = &p->input, *out = &p->out;
	uint32_t itemsize = vnpu_dtype_size(in->dtype);
	const char *in_base = vnpu_tensor_data(in, bufs);
	char *out_base = vnpu_tensor_data(out, bufs);
	struct vnpu_nd_counter c;
	uint64_t rows = vnpu_lines_init(&c, in, out, p->dim, block, nblocks), work = 0;

	for (uint64_t r = 0; r < rows; r++) {
		if (vnpu_kernel_poll(&work, 1) ||
		    softmax_row(in_base + c.off[0] * itemsize,
				in->strides[p->dim],
				out_base + c.off[1] * itemsize,
				out->strides[p->dim], in->sizes[p->dim],
				in->dtype, p->log != 0, &work))
			return;
		vnpu_nd_counter_next(&c);
	}
}

const struct vnpu_kernel_def vnpu_kernel_softmax = {
	.id = VNPU_KERNEL_SOFTMAX,
	.name = "softmax",
	.params_size = sizeof(struct vnpu_kp_softmax),
	.validate = softmax_validate,
	.run = softmax_run,
};
