// SPDX-License-Identifier: MIT
/*
 * SORT: each line along one dim sorted, with the positions the values came
 * from (sort, argsort, topk). Each block owns a range of lines; a line is
 * copied into values with its positions 0..n-1 into indices, then
 * heap-sorted there in place by (key, position): equal keys keep their
 * order, so the result is the stable sort's, with no workspace.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "elementwise.h"

static uint32_t sort_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_sort *p = params;
	uint32_t st;

	if (p->descending > 1 || p->reserved)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->input, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->values, bufs, nbufs);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->indices, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->dim >= p->input.ndim || p->input.dtype != p->values.dtype ||
	    p->indices.dtype != VNPU_DTYPE_I64 ||
	    !vnpu_same_shape(&p->input, &p->values) ||
	    !vnpu_same_shape(&p->input, &p->indices))
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

/* One line being sorted: values and indices in place, n elements. */
struct sort_line {
	char *values;
	int64_t vstep;		/* bytes between values */
	char *indices;
	int64_t istep;		/* bytes between indices */
	uint32_t dtype, itemsize;
	bool floating, descending;
};

static int64_t index_at(const struct sort_line *l, int64_t i)
{
	int64_t v;

	memcpy(&v, l->indices + i * l->istep, 8);
	return v;
}

/* -1, 0 or 1 as key i orders before, with or after key j (ascending: NaN
 * after every number, as PyTorch sorts it; descending the reverse). */
static int key_order(const struct sort_line *l, int64_t i, int64_t j)
{
	int r;

	if (l->floating) {
		double a = 0, b = 0;

		vnpu_ew_load_f64(l->values + i * l->vstep, 1, l->dtype, 1, &a);
		vnpu_ew_load_f64(l->values + j * l->vstep, 1, l->dtype, 1, &b);
		if (isnan(a) || isnan(b))
			r = isnan(a) - isnan(b);
		else
			r = (a > b) - (a < b);
	} else {
		int64_t a = 0, b = 0;

		vnpu_ew_load_i64(l->values + i * l->vstep, 1, l->dtype, 1, &a);
		vnpu_ew_load_i64(l->values + j * l->vstep, 1, l->dtype, 1, &b);
		r = (a > b) - (a < b);
	}
	return l->descending ? -r : r;
}

/* Element i goes after element j in the stable order. */
static bool after(const struct sort_line *l, int64_t i, int64_t j)
{
	int r = key_order(l, i, j);

	return r > 0 || (r == 0 && index_at(l, i) > index_at(l, j));
}

static void swap(const struct sort_line *l, int64_t i, int64_t j)
{
	char vi[8], vj[8], ii[8], ij[8];

	memcpy(vi, l->values + i * l->vstep, l->itemsize);
	memcpy(vj, l->values + j * l->vstep, l->itemsize);
	memcpy(l->values + i * l->vstep, vj, l->itemsize);
	memcpy(l->values + j * l->vstep, vi, l->itemsize);
	memcpy(ii, l->indices + i * l->istep, 8);
	memcpy(ij, l->indices + j * l->istep, 8);
	memcpy(l->indices + i * l->istep, ij, 8);
	memcpy(l->indices + j * l->istep, ii, 8);
}

/* Restores the heap (the element that goes last at the root) below root,
 * over the first n elements. */
static void sift_down(const struct sort_line *l, int64_t root, int64_t n)
{
	for (;;) {
		int64_t child = 2 * root + 1, last = root;

		if (child < n && after(l, child, last))
			last = child;
		if (child + 1 < n && after(l, child + 1, last))
			last = child + 1;
		if (last == root)
			return;
		swap(l, root, last);
		root = last;
	}
}

/* One line; true when the cancellation hook stopped it. */
static bool sort_line(const struct vnpu_kp_sort *p, const char *in, char *values,
		      char *indices, uint64_t *work)
{
	int64_t n = p->input.sizes[p->dim];
	struct sort_line l = {
		.values = values,
		.indices = indices,
		.dtype = p->input.dtype,
		.itemsize = vnpu_dtype_size(p->input.dtype),
		.floating = vnpu_dtype_is_floating(p->input.dtype),
		.descending = p->descending != 0,
	};
	int64_t in_step = p->input.strides[p->dim] * l.itemsize;

	l.vstep = p->values.strides[p->dim] * l.itemsize;
	l.istep = p->indices.strides[p->dim] * 8;
	/* memmove: values may be the input itself */
	for (int64_t i = 0; i < n; i++) {
		memmove(values + i * l.vstep, in + i * in_step, l.itemsize);
		memcpy(indices + i * l.istep, &i, 8);
	}
	for (int64_t i = n / 2; i-- > 0;) {
		if (vnpu_kernel_poll(work, 1))
			return true;
		sift_down(&l, i, n);
	}
	for (int64_t end = n - 1; end > 0; end--) {
		if (vnpu_kernel_poll(work, 1))
			return true;
		swap(&l, 0, end);
		sift_down(&l, 0, end);
	}
	return false;
}

static void sort_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_sort *p = params;
	uint32_t itemsize = vnpu_dtype_size(p->input.dtype);
	const char *in_base = vnpu_tensor_data(&p->input, bufs);
	char *values_base = vnpu_tensor_data(&p->values, bufs);
	char *indices_base = vnpu_tensor_data(&p->indices, bufs);
	struct vnpu_nd_counter c, ci;
	uint64_t lines = vnpu_lines_init(&c, &p->input, &p->values, p->dim, block, nblocks);
	uint64_t work = 0;

	/* the indices' lines, in the same order */
	vnpu_lines_init(&ci, &p->indices, &p->indices, p->dim, block, nblocks);
	for (uint64_t r = 0; r < lines; r++) {
		if (sort_line(p, in_base + c.off[0] * itemsize,
			      values_base + c.off[1] * itemsize,
			      indices_base + ci.off[0] * 8, &work))
			return;
		vnpu_nd_counter_next(&c);
		vnpu_nd_counter_next(&ci);
	}
}

const struct vnpu_kernel_def vnpu_kernel_sort = {
	.id = VNPU_KERNEL_SORT,
	.name = "sort",
	.params_size = sizeof(struct vnpu_kp_sort),
	.validate = sort_validate,
	.run = sort_run,
};
