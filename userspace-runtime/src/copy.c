// SPDX-License-Identifier: MIT
/*
 * Copies and memset. Device-side work is DMA_COPY / FILL on the stream;
 * pageable host memory is staged through two pinned buffers per hardware
 * queue (double buffered); pinned host memory is copied by DMA directly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const kind_names[] = {"H2H", "H2D", "D2H", "D2D"};

/* DMA_COPY of device VAs, split at the command's size limit. */
static vnpu_error_t dma(struct rt_stream *s, const char *what, uint64_t src,
			uint64_t dst, uint64_t size, uint64_t *seq)
{
	while (size) {
		uint64_t n = size < VNPU_COPY_MAX_BYTES ? size
							: VNPU_COPY_MAX_BYTES;
		struct vnpu_cmd c = vnpu_copy_cmd(src, dst, n);
		struct rt_opdesc op = {.what = what, .bytes = n};
		vnpu_error_t err = rt_submit(s, &op, &c, 1, seq);

		if (err)
			return err;
		src += n;
		dst += n;
		size -= n;
	}
	return VNPU_SUCCESS;
}

static vnpu_error_t staging_ready(struct rt_stream *s)
{
	struct rt_hwq *q = s->hwq;
	struct rt_device *d = s->dev;

	for (int i = 0; i < 2; i++) {
		vnpu_error_t err;

		if (q->staging[i].size)
			continue;
		err = d->be->bo_create(d->bdev, RT_STAGING_BYTES,
				       VNPURT_DOMAIN_HOST, &q->staging[i]);
		if (err)
			return rt_fail_prefix(err, "allocating a staging buffer");
	}
	return VNPU_SUCCESS;
}

/* Pageable -> device: returns once the source has been consumed. */
static vnpu_error_t staged_h2d(struct rt_stream *s, uint64_t dst,
			       const uint8_t *src, uint64_t size)
{
	struct rt_hwq *q = s->hwq;
	vnpu_error_t err;

	pthread_mutex_lock(&q->staging_lock);
	err = staging_ready(s);
	for (uint64_t off = 0, i = 0; !err && off < size; i++) {
		uint64_t n = size - off < RT_STAGING_BYTES ? size - off
							   : RT_STAGING_BYTES;
		struct vnpurt_bo *b = &q->staging[i & 1];

		rt_hwq_wait(q, q->staging_seq[i & 1]);
		memcpy(b->cpu, src + off, n);
		err = dma(s, "memcpy H2D (staged)", b->va, dst + off, n,
			  &q->staging_seq[i & 1]);
		off += n;
	}
	pthread_mutex_unlock(&q->staging_lock);
	return err;
}

/* Device -> pageable: waits for the stream to reach and finish the copy,
 * one chunk ahead of the host. */
static vnpu_error_t staged_d2h(struct rt_stream *s, uint8_t *dst,
			       uint64_t src, uint64_t size)
{
	struct rt_hwq *q = s->hwq;
	uint64_t chunks = (size + RT_STAGING_BYTES - 1) / RT_STAGING_BYTES;
	vnpu_error_t err;

	pthread_mutex_lock(&q->staging_lock);
	err = staging_ready(s);
	for (uint64_t i = 0; !err && i <= chunks; i++) {
		/* Queue chunk i, then drain chunk i - 1. */
		if (i < chunks) {
			uint64_t off = i * RT_STAGING_BYTES;
			uint64_t n = size - off < RT_STAGING_BYTES
					     ? size - off
					     : RT_STAGING_BYTES;

			err = dma(s, "memcpy D2H (staged)", src + off,
				  q->staging[i & 1].va, n,
				  &q->staging_seq[i & 1]);
		}
		if (!err && i > 0) {
			uint64_t off = (i - 1) * RT_STAGING_BYTES;
			uint64_t n = size - off < RT_STAGING_BYTES
					     ? size - off
					     : RT_STAGING_BYTES;

			rt_hwq_wait(q, q->staging_seq[(i - 1) & 1]);
			memcpy(dst + off, q->staging[(i - 1) & 1].cpu, n);
		}
	}
	pthread_mutex_unlock(&q->staging_lock);
	return err;
}

static vnpu_error_t kind_error(enum vnpu_memcpy_kind kind, const char *which,
			       const char *is)
{
	return rt_fail(VNPU_ERROR_INVALID_COPY_KIND,
		       "memcpy %s: the %s pointer is %s", kind_names[kind],
		       which, is);
}

static const char *side_name(enum rt_ptr_kind s)
{
	return s == RT_PTR_DEVICE ? "device memory"
	       : s == RT_PTR_PINNED ? "pinned host memory"
				    : "host memory";
}

/* A side inside an allocation must end inside it too: a device range that
 * does not is no device range, and a pinned one is refused rather than
 * staged, which would read or write past the block. */
static vnpu_error_t check_extent(enum vnpu_memcpy_kind kind, const char *which,
				 const void *p, size_t size,
				 enum rt_ptr_kind side, uint64_t avail)
{
	if (side == RT_PTR_HOST || size <= avail)
		return VNPU_SUCCESS;
	if (side == RT_PTR_DEVICE)
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "memcpy %s: %s %p + %zu bytes runs past its "
			       "device allocation (%" PRIu64 " bytes left)",
			       kind_names[kind], which, p, size, avail);
	return rt_fail(VNPU_ERROR_INVALID_VALUE,
		       "memcpy %s: %s %p + %zu bytes runs past its pinned "
		       "block (%" PRIu64 " bytes left)",
		       kind_names[kind], which, p, size, avail);
}

static vnpu_error_t copy(struct rt_stream *s, void *dst, const void *src,
			 size_t size, enum vnpu_memcpy_kind kind)
{
	struct rt_device *d = s->dev;
	enum rt_ptr_kind ds, ss;
	uint64_t dva = 0, sva = 0, davail = 0, savail = 0, seq;
	vnpu_error_t err;
	char what[32];

	if ((unsigned)kind > VNPU_MEMCPY_D2D)
		return rt_fail(VNPU_ERROR_INVALID_COPY_KIND,
			       "copy kind %d is none of H2H/H2D/D2H/D2D",
			       (int)kind);
	if (!dst || !src)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "memcpy %s: %s is NULL",
			       kind_names[kind], dst ? "src" : "dst");
	if (!size)
		return VNPU_SUCCESS;
	if ((uintptr_t)dst > UINTPTR_MAX - size ||
	    (uintptr_t)src > UINTPTR_MAX - size)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "memcpy of %zu bytes wraps the address space",
			       size);
	ds = rt_lookup(d, dst, &dva, &davail);
	ss = rt_lookup(d, src, &sva, &savail);
	bool dst_dev = kind == VNPU_MEMCPY_H2D || kind == VNPU_MEMCPY_D2D;
	bool src_dev = kind == VNPU_MEMCPY_D2H || kind == VNPU_MEMCPY_D2D;

	if (dst_dev != (ds == RT_PTR_DEVICE)) {
		if (dst_dev && ds == RT_PTR_HOST && ss != RT_PTR_DEVICE)
			return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
				       "memcpy %s: dst %p is not inside a "
				       "live device allocation",
				       kind_names[kind], dst);
		return kind_error(kind, "dst", side_name(ds));
	}
	if (src_dev != (ss == RT_PTR_DEVICE)) {
		if (src_dev && ss == RT_PTR_HOST && ds != RT_PTR_DEVICE)
			return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
				       "memcpy %s: src %p is not inside a "
				       "live device allocation",
				       kind_names[kind], src);
		return kind_error(kind, "src", side_name(ss));
	}
	err = check_extent(kind, "dst", dst, size, ds, davail);
	if (!err)
		err = check_extent(kind, "src", src, size, ss, savail);
	if (!err)
		err = rt_device_check(d, "memcpy %s", kind_names[kind]);
	if (err)
		return err;
	snprintf(what, sizeof(what), "memcpy %s", kind_names[kind]);
	if (ds == RT_PTR_HOST && ss == RT_PTR_HOST) {
		/* H2H: a host copy in stream order. */
		uint64_t t0 = rt_now_ns();

		rt_stream_sync(s, false);
		memmove(dst, src, size);
		rt_trace_host("memcpy H2H", t0, rt_now_ns());
		return VNPU_SUCCESS;
	}
	if (ss == RT_PTR_HOST)
		return staged_h2d(s, dva, src, size);
	if (ds == RT_PTR_HOST)
		return staged_d2h(s, dst, sva, size);
	return dma(s, what, sva, dva, size, &seq);
}

vnpu_error_t vnpu_memcpy_async(void *dst, const void *src, size_t size,
			       enum vnpu_memcpy_kind kind, vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	err = copy(s, dst, src, size, kind);
	rt_stream_put(s);
	return err;
}

vnpu_error_t vnpu_memcpy(void *dst, const void *src, size_t size,
			 enum vnpu_memcpy_kind kind)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(NULL, &s);

	if (err)
		return err;
	err = copy(s, dst, src, size, kind);
	if (!err)
		err = rt_stream_sync(s, true);
	return err;
}

static vnpu_error_t fill(struct rt_stream *s, void *devptr, int value,
			 size_t size)
{
	uint64_t va;
	vnpu_error_t err;

	if (!devptr)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "memset: devptr is NULL");
	if (!size)
		return VNPU_SUCCESS;
	err = rt_resolve(s->dev, devptr, size, &va, NULL);
	if (err)
		return err;
	while (size) {
		uint64_t n = size < VNPU_COPY_MAX_BYTES ? size
							: VNPU_COPY_MAX_BYTES;
		bool wide = !(va % 4) && !(n % 4);
		struct vnpu_cmd c = rt_cmd_fill(va, n, (uint8_t)value, wide);
		struct rt_opdesc op = {.what = "memset", .bytes = n};

		err = rt_submit(s, &op, &c, 1, NULL);
		if (err)
			return err;
		va += n;
		size -= n;
	}
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_memset_async(void *devptr, int value, size_t size,
			       vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	err = fill(s, devptr, value, size);
	rt_stream_put(s);
	return err;
}

vnpu_error_t vnpu_memset(void *devptr, int value, size_t size)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(NULL, &s);

	if (err)
		return err;
	err = fill(s, devptr, value, size);
	if (!err)
		err = rt_stream_sync(s, true);
	return err;
}
