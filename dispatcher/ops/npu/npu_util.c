// SPDX-License-Identifier: MIT
/* NPU kernel helpers: device tensors in plain and internal formats, launch
 * descriptors from dispatcher tensors, launches and copies on the current
 * stream, format casts through libvnpurt. */
#include <stdio.h>
#include <string.h>

#include "npu_util.h"
#include "dispatch_internal.h"

static bool rt_check(const char *op, const char *what, vnpu_error_t e)
{
	if (e == VNPU_SUCCESS)
		return true;
	vnpu_at_error_set(e == VNPU_ERROR_OUT_OF_MEMORY ? VNPU_AT_ERR_OOM :
			  VNPU_AT_ERR_DEVICE, "%s: %s: %s (%s)", op, what,
			  vnpu_error_string(e), vnpu_last_error_detail());
	return false;
}

bool vnpu_at_npu_synchronize(void)
{
	if (!vnpu_npu_ready())
		return false;
	return rt_check("npu", "synchronize",
			vnpu_stream_synchronize(vnpu_npu_stream()));
}

int vnpu_npu_dtype(enum vnpu_at_dtype dtype)
{
	switch (dtype) {
	case VNPU_AT_F32: return VNPU_DTYPE_F32;
	case VNPU_AT_F16: return VNPU_DTYPE_F16;
	case VNPU_AT_BF16: return VNPU_DTYPE_BF16;
	case VNPU_AT_F64: return VNPU_DTYPE_F64;
	case VNPU_AT_I32: return VNPU_DTYPE_I32;
	case VNPU_AT_I64: return VNPU_DTYPE_I64;
	case VNPU_AT_I8: return VNPU_DTYPE_I8;
	case VNPU_AT_I16: return VNPU_DTYPE_I16;
	case VNPU_AT_U8: return VNPU_DTYPE_U8;
	case VNPU_AT_BOOL: return VNPU_DTYPE_BOOL;
	default: return -1;
	}
}

static bool is_internal(int fmt)
{
	return fmt == VNPU_FORMAT_NC1HWC0 || fmt == VNPU_FORMAT_FRACTAL_Z ||
	       fmt == VNPU_FORMAT_FRACTAL_NZ;
}

/* t covers its whole internal-format base (the only way kernels can read
 * packed data). */
bool vnpu_npu_is_whole_base(const struct vnpu_at_tensor *t)
{
	const struct vnpu_at_npu_desc *d = &t->storage->npu;

	if (t->offset || t->ndim != d->base_ndim)
		return false;
	for (uint32_t i = 0; i < t->ndim; i++)
		if (t->sizes[i] != d->base_sizes[i])
			return false;
	return vnpu_at_is_contiguous(t);
}

static bool add_buffer(struct vnpu_npu_launch *l, const struct vnpu_at_storage *s,
		       uint32_t access, uint32_t *index)
{
	for (uint32_t i = 0; i < l->nbufs; i++)
		if (l->storages[i] == s) {
			l->bufs[i].access |= access;
			*index = i;
			return true;
		}
	if (l->nbufs == VNPU_KARGS_MAX_BUFFERS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "npu launch: more than %d buffers",
				  VNPU_KARGS_MAX_BUFFERS);
		return false;
	}
	l->storages[l->nbufs] = s;
	l->bufs[l->nbufs] = (struct vnpu_launch_buffer){
		s->data, s->nbytes ? s->nbytes : 1, access };
	*index = l->nbufs++;
	return true;
}

bool vnpu_npu_overlaps_itself(const struct vnpu_at_tensor *t)
{
	if (!vnpu_at_numel(t))
		return false;	/* nothing is written */
	for (uint32_t i = 0; i < t->ndim; i++)
		if (t->strides[i] == 0 && t->sizes[i] > 1)
			return true;
	return false;
}

/*
 * The device refuses an output whose elements overlap (kernel_abi.h,
 * vnpu_tensor_is_injective), asynchronously, which would surface at some
 * later synchronisation; refuse it here. An expanded tensor gets
 * PyTorch's own check and message (has_internal_overlap); other
 * overlapping views (as_strided), which PyTorch's CPU kernels write in
 * some order, are refused too.
 */
bool vnpu_npu_injective(const struct vnpu_at_tensor *t)
{
	struct vnpu_tensor d;

	if (is_internal(t->storage->npu.npu_format))
		return true;
	memset(&d, 0, sizeof(d));
	d.ndim = t->ndim;
	memcpy(d.sizes, t->sizes, t->ndim * sizeof(int64_t));
	memcpy(d.strides, t->strides, t->ndim * sizeof(int64_t));
	d.format = VNPU_FORMAT_ND;
	return vnpu_tensor_is_injective(&d);
}

static bool check_writable(const struct vnpu_at_tensor *t)
{
	if (vnpu_npu_overlaps_itself(t)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.");
		return false;
	}
	if (vnpu_npu_injective(t))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "unsupported operation: elements of the written-to tensor overlap in memory (a view made with as_strided), which the npu cannot write. Please clone() the tensor before performing the operation.");
	return false;
}

bool vnpu_npu_arg(struct vnpu_npu_launch *l, const struct vnpu_at_tensor *t,
		  uint32_t access, struct vnpu_tensor *desc)
{
	int dt = vnpu_npu_dtype((enum vnpu_at_dtype)t->dtype);
	int fmt = t->storage->npu.npu_format;

	memset(desc, 0, sizeof(*desc));
	if (t->storage->device.type != VNPU_AT_NPU) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "npu launch: operand is not on the npu");
		return false;
	}
	if (dt < 0) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "npu launch: the device has no %s",
				  vnpu_at_dtype_name((enum vnpu_at_dtype)t->dtype));
		return false;
	}
	if ((access & VNPU_ACCESS_WRITE) && !check_writable(t))
		return false;
	if (!add_buffer(l, t->storage, access, &desc->buffer))
		return false;
	desc->dtype = (uint32_t)dt;
	desc->ndim = t->ndim;
	for (uint32_t i = 0; i < t->ndim; i++)
		desc->sizes[i] = t->sizes[i];
	if (is_internal(fmt)) {
		if (!vnpu_npu_is_whole_base(t)) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "npu launch: a view of an internal-format tensor must be made plain first (vnpu_npu_plain)");
			return false;
		}
		desc->format = (uint32_t)fmt;
	} else {
		desc->format = VNPU_FORMAT_ND;
		desc->offset = t->offset;
		for (uint32_t i = 0; i < t->ndim; i++)
			desc->strides[i] = t->strides[i];
	}
	if (access & VNPU_ACCESS_WRITE)
		((struct vnpu_at_storage *)t->storage)->version++;
	return true;
}

bool vnpu_npu_arg_bcast(struct vnpu_npu_launch *l,
			const struct vnpu_at_tensor *t, uint32_t out_ndim,
			uint32_t access, struct vnpu_tensor *desc)
{
	uint32_t lead;

	if (!vnpu_npu_arg(l, t, access, desc))
		return false;
	if (desc->format != VNPU_FORMAT_ND || t->ndim > out_ndim) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "npu launch: cannot broadcast operand");
		return false;
	}
	lead = out_ndim - t->ndim;
	for (uint32_t i = out_ndim; i-- > 0;) {
		desc->sizes[i] = i >= lead ? t->sizes[i - lead] : 1;
		desc->strides[i] = i >= lead ? t->strides[i - lead] : 0;
	}
	desc->ndim = out_ndim;
	return true;
}

bool vnpu_npu_launch(const char *op, struct vnpu_npu_launch *l,
		     const char *name, const void *params, size_t params_size,
		     int64_t work)
{
	int64_t blocks = work / 16384 + 1;
	vnpu_error_t e;
	char what[64];

	if (blocks > 32)
		blocks = 32;
	e = vnpu_launch_kernel(name, (uint32_t)blocks, l->bufs, l->nbufs,
			       params, params_size, vnpu_npu_stream());
	if (e == VNPU_SUCCESS)
		return true;
	/* the message only when it is needed: launches are the hot path */
	snprintf(what, sizeof(what), "launch %s", name);
	return rt_check(op, what, e);
}

struct vnpu_at_tensor *vnpu_npu_unsupported(void)
{
	return vnpu_at_error_set(VNPU_AT_ERR_UNSUPPORTED,
				 "no NPU kernel takes these arguments");
}

struct vnpu_at_tensor *vnpu_npu_empty(uint32_t ndim, const int64_t *sizes,
				      enum vnpu_at_dtype dtype)
{
	if (!vnpu_npu_ready())
		return NULL;
	return vnpu_at_empty(ndim, sizes, dtype, vnpu_npu_device());
}

struct vnpu_at_tensor *vnpu_npu_empty_iter(uint32_t n,
					   const struct vnpu_at_tensor *const *in,
					   uint32_t ndim, const int64_t *sizes,
					   enum vnpu_at_dtype dtype)
{
	int64_t strides[VNPU_AT_MAX_DIMS];

	if (!vnpu_npu_ready())
		return NULL;
	vnpu_at_iter_strides(n, in, ndim, sizes, strides);
	return vnpu_at_empty_strided(ndim, sizes, strides, dtype,
				     vnpu_npu_device());
}

struct vnpu_at_tensor *vnpu_npu_empty_like_format(const struct vnpu_at_tensor *like,
						  const int64_t *sizes,
						  enum vnpu_at_dtype dtype)
{
	int64_t strides[4];

	if (!vnpu_at_channels_last_like(like))
		return vnpu_npu_empty(4, sizes, dtype);
	if (!vnpu_npu_ready())
		return NULL;
	vnpu_at_channels_last_strides(sizes, strides);
	return vnpu_at_empty_strided(4, sizes, strides, dtype, vnpu_npu_device());
}

struct vnpu_at_tensor *vnpu_npu_empty_format(uint32_t ndim,
					     const int64_t *sizes,
					     enum vnpu_at_dtype dtype,
					     int format)
{
	int64_t sshape[VNPU_STORAGE_MAX_DIMS], strides[VNPU_AT_MAX_DIMS];
	vnpu_tensor_desc_t d;
	struct vnpu_at_storage *s;
	struct vnpu_at_tensor *t;
	int dt = vnpu_npu_dtype(dtype);
	uint32_t snd;
	size_t bytes;
	vnpu_error_t e;

	if (!is_internal(format))
		return vnpu_npu_empty(ndim, sizes, dtype);
	if (dt < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu_format_cast: the device has no %s",
					 vnpu_at_dtype_name(dtype));
	if (!vnpu_npu_ready())
		return NULL;
	e = vnpu_tensor_desc_create(&d, (enum vnpu_dtype)dt, ndim, sizes,
				    (enum vnpu_format)format);
	if (e != VNPU_SUCCESS) {
		rt_check("npu_format_cast", "format", e);
		return NULL;
	}
	e = vnpu_tensor_desc_storage_size(d, &bytes);
	if (e == VNPU_SUCCESS)
		e = vnpu_tensor_desc_storage_shape(d, &snd, sshape);
	vnpu_tensor_desc_destroy(d);
	if (!rt_check("npu_format_cast", "storage shape", e))
		return NULL;
	s = vnpu_storage_new(bytes, vnpu_npu_device());
	if (!s)
		return NULL;
	vnpu_at_contiguous_strides(ndim, sizes, strides);
	s->npu.npu_format = format;
	s->npu.origin_format = format == VNPU_FORMAT_FRACTAL_NZ ? VNPU_FORMAT_ND
								: VNPU_FORMAT_NCHW;
	s->npu.base_ndim = ndim;
	s->npu.storage_ndim = snd;
	memcpy(s->npu.base_sizes, sizes, ndim * sizeof(int64_t));
	memcpy(s->npu.base_strides, strides, ndim * sizeof(int64_t));
	memcpy(s->npu.storage_sizes, sshape, snd * sizeof(int64_t));
	t = vnpu_tensor_on_storage(s, ndim, sizes, strides, 0, dtype);
	return t;
}

int vnpu_npu_format_of(const struct vnpu_at_tensor *t)
{
	if (t->storage->device.type != VNPU_AT_NPU)
		return VNPU_FORMAT_ND;
	return t->storage->npu.npu_format;
}

/* One vnpu_format_cast of a whole base into a new tensor of `format`. */
static struct vnpu_at_tensor *cast_base(struct vnpu_at_storage *s,
					enum vnpu_at_dtype dtype,
					const int64_t *src_sizes_unused,
					int format)
{
	const struct vnpu_at_npu_desc *nd = &s->npu;
	struct vnpu_at_tensor *dst;
	vnpu_tensor_desc_t sd, dd;
	int dt = vnpu_npu_dtype(dtype);
	vnpu_error_t e;

	(void)src_sizes_unused;
	dst = is_internal(format) ?
	      vnpu_npu_empty_format(nd->base_ndim, nd->base_sizes, dtype, format) :
	      vnpu_npu_empty(nd->base_ndim, nd->base_sizes, dtype);
	if (!dst)
		return NULL;
	e = vnpu_tensor_desc_create(&sd, (enum vnpu_dtype)dt, nd->base_ndim,
				    nd->base_sizes, (enum vnpu_format)nd->npu_format);
	if (e != VNPU_SUCCESS) {
		vnpu_at_release(dst);
		rt_check("npu_format_cast", "source descriptor", e);
		return NULL;
	}
	e = vnpu_tensor_desc_create(&dd, (enum vnpu_dtype)dt, nd->base_ndim,
				    nd->base_sizes, (enum vnpu_format)format);
	if (e == VNPU_SUCCESS) {
		e = vnpu_format_cast(sd, s->data, dd, dst->storage->data,
				     vnpu_npu_stream());
		vnpu_tensor_desc_destroy(dd);
	}
	vnpu_tensor_desc_destroy(sd);
	if (!rt_check("npu_format_cast", "format cast", e)) {
		vnpu_at_release(dst);
		return NULL;
	}
	dst->storage->version++;
	return dst;
}

struct vnpu_at_tensor *vnpu_npu_plain(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *base, *v;

	if (!is_internal(vnpu_npu_format_of(t)))
		return vnpu_at_retain(t);
	base = cast_base(t->storage, (enum vnpu_at_dtype)t->dtype, NULL,
			 VNPU_FORMAT_ND);
	if (!base)
		return NULL;
	/* a view keeps its geometry relative to the base's contiguous layout */
	v = vnpu_at_view_of(base, t->ndim, t->sizes, t->strides, t->offset);
	vnpu_at_release(base);
	return v;
}

struct vnpu_at_tensor *vnpu_npu_as_format(struct vnpu_at_tensor *t, int format)
{
	struct vnpu_at_storage *s = t->storage;
	struct vnpu_at_tensor *src, *r;

	if (vnpu_npu_format_of(t) == format)
		return vnpu_at_retain(t);
	if (s->format_cache && s->format_cache_version == s->version &&
	    s->format_cache_own_version == s->format_cache->storage->version &&
	    vnpu_npu_format_of(s->format_cache) == format && vnpu_npu_is_whole_base(t))
		return vnpu_at_retain(s->format_cache);
	src = vnpu_npu_plain(t);
	if (!src)
		return NULL;
	if (!vnpu_at_is_contiguous(src) || src->offset) {
		struct vnpu_at_tensor *c = vnpu_at_contiguous(src);

		vnpu_at_release(src);
		if (!c)
			return NULL;
		src = c;
	}
	{
		/* cast src (contiguous ND, whole storage view) */
		struct vnpu_at_storage tmp = *src->storage;

		tmp.npu.base_ndim = src->ndim;
		memcpy(tmp.npu.base_sizes, src->sizes, src->ndim * sizeof(int64_t));
		tmp.npu.npu_format = VNPU_FORMAT_ND;
		tmp.data = (char *)src->storage->data +
			   src->offset * (int64_t)vnpu_at_dtype_size((enum vnpu_at_dtype)src->dtype);
		r = cast_base(&tmp, (enum vnpu_at_dtype)src->dtype, NULL, format);
	}
	vnpu_at_release(src);
	if (r && vnpu_npu_is_whole_base(t)) {
		vnpu_at_release(s->format_cache);
		s->format_cache = vnpu_at_retain(r);
		s->format_cache_version = s->version;
		s->format_cache_own_version = r->storage->version;
	}
	return r;
}

/* A CPU tensor shaped like dst holding src converted to dtype (src
 * broadcast to dst's shape). */
static struct vnpu_at_tensor *cpu_dense(struct vnpu_at_tensor *src,
					const struct vnpu_at_tensor *shape,
					enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *t = vnpu_at_empty(shape->ndim, shape->sizes, dtype,
						 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *r;

	if (!t)
		return NULL;
	r = vnpu_redispatch_copy_(vnpu_keyset_of(VNPU_KEY_CPU), t, src, false);
	vnpu_at_release(t);
	return r;
}

static struct vnpu_at_tensor *expand_to(struct vnpu_at_tensor *src,
					const struct vnpu_at_tensor *dst)
{
	int64_t st[VNPU_AT_MAX_DIMS];
	uint32_t lead = dst->ndim - src->ndim;

	for (uint32_t i = 0; i < dst->ndim; i++)
		st[i] = i < lead || src->sizes[i - lead] == 1 ? 0 : src->strides[i - lead];
	return vnpu_at_view_of(src, dst->ndim, dst->sizes, st, src->offset);
}

/* Device copy with dtype conversion and broadcast (plain dst). */
static bool d2d(const char *op, struct vnpu_at_tensor *dst, struct vnpu_at_tensor *src)
{
	struct vnpu_kp_cast p;
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *sp, *se;
	bool ok;

	if (!vnpu_at_numel(dst))
		return true;
	sp = vnpu_npu_plain(src);
	if (!sp)
		return false;
	se = expand_to(sp, dst);
	vnpu_at_release(sp);
	if (!se)
		return false;
	ok = vnpu_npu_arg(&l, se, VNPU_ACCESS_READ, &p.src) &&
	     vnpu_npu_arg(&l, dst, VNPU_ACCESS_WRITE, &p.out) &&
	     vnpu_npu_launch(op, &l, "cast", &p, sizeof(p), vnpu_at_numel(dst));
	vnpu_at_release(se);
	return ok;
}

bool vnpu_npu_copy(const char *op, struct vnpu_at_tensor *dst,
		   struct vnpu_at_tensor *src)
{
	return vnpu_npu_copy_nb(op, dst, src, false);
}

bool vnpu_npu_copy_nb(const char *op, struct vnpu_at_tensor *dst,
		      struct vnpu_at_tensor *src, bool non_blocking)
{
	bool dst_npu = vnpu_at_is_npu(dst), src_npu = vnpu_at_is_npu(src);
	size_t isz = vnpu_at_dtype_size((enum vnpu_at_dtype)dst->dtype);
	bool ok;

	if (!vnpu_npu_ready() || !check_writable(dst))
		return false;
	if (dst_npu && is_internal(vnpu_npu_format_of(dst))) {
		/* copy_h2d / d2d into an internal format: through a plain
		 * tensor, then one format cast into dst's storage */
		struct vnpu_at_tensor *tmp, *cast;
		struct vnpu_at_storage *s = dst->storage;

		if (!vnpu_npu_is_whole_base(dst)) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: writing into a view of an internal-format tensor is not supported; copy into the whole tensor",
					  op);
			return false;
		}
		tmp = vnpu_npu_empty(dst->ndim, dst->sizes, (enum vnpu_at_dtype)dst->dtype);
		ok = tmp && vnpu_npu_copy(op, tmp, src);
		cast = ok ? vnpu_npu_as_format(tmp, s->npu.npu_format) : NULL;
		ok = cast != NULL;
		if (ok) {
			ok = rt_check(op, "copy", vnpu_memcpy_async(s->data, cast->storage->data,
								    s->nbytes, VNPU_MEMCPY_D2D,
								    vnpu_npu_stream()));
			s->version++;
		}
		vnpu_at_release(cast);
		vnpu_at_release(tmp);
		return ok;
	}
	if (dst_npu && src_npu)
		return d2d(op, dst, src);
	if (dst_npu) {	/* H2D: dense on the host in dst's dtype, one DMA */
		struct vnpu_at_tensor *h = cpu_dense(src, dst, (enum vnpu_at_dtype)dst->dtype);
		struct vnpu_at_tensor *tgt = dst;

		if (!h)
			return false;
		if (!vnpu_at_is_contiguous(dst)) {
			tgt = vnpu_npu_empty(dst->ndim, dst->sizes, (enum vnpu_at_dtype)dst->dtype);
			if (!tgt) {
				vnpu_at_release(h);
				return false;
			}
		}
		ok = !vnpu_at_numel(dst) ||
		     rt_check(op, "copy H2D", vnpu_memcpy_async(
				      (char *)tgt->storage->data + tgt->offset * (int64_t)isz,
				      vnpu_at_data(h), (size_t)vnpu_at_numel(dst) * isz,
				      VNPU_MEMCPY_H2D, vnpu_npu_stream()));
		if (ok && tgt != dst)
			ok = d2d(op, dst, tgt);
		tgt->storage->version++;
		if (tgt != dst)
			vnpu_at_release(tgt);
		vnpu_at_release(h);
		return ok;
	}
	if (src_npu) {	/* D2H: plain, dense, converted on the device, one DMA */
		struct vnpu_at_tensor *dev, *h;
		bool direct;
		enum vnpu_at_dtype dt = (enum vnpu_at_dtype)dst->dtype;

		/* converted on the device when it has dst's dtype, else on
		 * the host after the DMA */
		if (vnpu_npu_dtype(dt) < 0)
			dt = (enum vnpu_at_dtype)src->dtype;
		dev = vnpu_npu_empty(dst->ndim, dst->sizes, dt);
		if (!dev)
			return false;
		ok = d2d(op, dev, src);
		/* non_blocking into a dense dst of that dtype: one DMA into it,
		 * left on the stream (the runtime itself waits when dst is
		 * pageable, as CUDA does) */
		direct = non_blocking && vnpu_at_is_contiguous(dst) &&
			 dst->dtype == dt;
		h = !ok ? NULL : direct ? vnpu_at_retain(dst) :
		    vnpu_at_empty(dst->ndim, dst->sizes, dt, VNPU_AT_DEV_CPU);
		ok = h && (!vnpu_at_numel(dst) ||
			   rt_check(op, "copy D2H", vnpu_memcpy_async(
					    vnpu_at_data(h), dev->storage->data,
					    (size_t)vnpu_at_numel(dst) *
					    vnpu_at_dtype_size(dt),
					    VNPU_MEMCPY_D2H, vnpu_npu_stream())));
		ok = ok && (direct ||
			    rt_check(op, "synchronize",
				     vnpu_stream_synchronize(vnpu_npu_stream())));
		if (ok && !direct) {
			struct vnpu_at_tensor *r = vnpu_redispatch_copy_(
				vnpu_keyset_of(VNPU_KEY_CPU), dst, h, false);

			ok = r != NULL;
			vnpu_at_release(r);
		}
		vnpu_at_release(h);
		vnpu_at_release(dev);
		return ok;
	}
	{
		struct vnpu_at_tensor *r = vnpu_redispatch_copy_(
			vnpu_keyset_of(VNPU_KEY_CPU), dst, src, false);

		vnpu_at_release(r);
		return r != NULL;
	}
}

bool vnpu_npu_resize_internal(struct vnpu_at_tensor *self,
			      struct vnpu_at_int_array size)
{
	int fmt = vnpu_npu_format_of(self);
	struct vnpu_at_tensor *p, *r, *c;

	if (!vnpu_npu_is_whole_base(self)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "aten::resize_: a view of an internal-format tensor cannot be resized; resize the whole tensor");
		return false;
	}
	p = vnpu_npu_plain(self);
	r = p ? vnpu_resize_impl(p, size) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(p);
		return false;
	}
	/* FRACTAL_NZ lays out 2 or more dims, NC1HWC0 and FRACTAL_Z 4
	 * (docs/formats.md); another shape stays ND */
	if (fmt == VNPU_FORMAT_FRACTAL_NZ ? size.n >= 2 : size.n == 4)
		c = vnpu_npu_as_format(p, fmt);
	else
		c = vnpu_at_retain(p);
	vnpu_at_release(p);
	if (!c)
		return false;
	__atomic_add_fetch(&c->storage->refcount, 1, __ATOMIC_RELAXED);
	vnpu_storage_release(self->storage);
	self->storage = c->storage;
	self->ndim = c->ndim;
	memcpy(self->sizes, c->sizes, sizeof(self->sizes));
	memcpy(self->strides, c->strides, sizeof(self->strides));
	self->offset = c->offset;
	vnpu_at_release(c);
	return true;
}
