// SPDX-License-Identifier: MIT
/* Initialisation, backend choice, devices and their properties. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct rt_runtime rt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int current_device;

/* fork(): the child gets a copy of the runtime's memory but none of its
 * threads, and shares the parent's device file and contexts. A child of a
 * process that had started the runtime therefore never uses it: every
 * call fails with VNPU_ERROR_FORKED (CUDA's rule), and its exit leaves the
 * parent's device state alone. A child forked before vnpu_init() starts
 * its own runtime as usual. */
static bool forked_child;

static void mark_forked_child(void)
{
	if (__atomic_load_n(&rt.refs, __ATOMIC_RELAXED) > 0)
		forked_child = true;
	/* another thread may have held it at the fork */
	pthread_mutex_init(&rt.lock, NULL);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, mark_forked_child);
}

static vnpu_error_t fail_forked(void)
{
	return rt_fail(VNPU_ERROR_FORKED,
		       "this process was forked from one that had started "
		       "the npu runtime; a forked child cannot use the device "
		       "(start it before the runtime, or use the 'spawn' "
		       "start method of multiprocessing)");
}

int vnpu_is_initialized(void)
{
	return !forked_child && __atomic_load_n(&rt.refs, __ATOMIC_ACQUIRE) > 0;
}

vnpu_error_t rt_ready(void)
{
	if (forked_child)
		return fail_forked();
	if (__atomic_load_n(&rt.refs, __ATOMIC_ACQUIRE) <= 0)
		return rt_fail(VNPU_ERROR_NOT_INITIALIZED,
			       "vnpu_init() has not been called (or the "
			       "runtime was finalized)");
	return VNPU_SUCCESS;
}

struct rt_device *rt_current_device(void)
{
	int i = current_device;

	return rt.devs[i >= 0 && i < rt.ndev ? i : 0];
}

vnpu_error_t rt_device_check(struct rt_device *d, const char *fmt, ...)
{
	char what[64], why[192];
	va_list ap;

	if (!d->be->lost(d->bdev, why, sizeof(why)))
		return VNPU_SUCCESS;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return rt_fail(VNPU_ERROR_DEVICE_RESET, "%s: device %d is lost: %s",
		       what, d->index, why);
}

static void device_close(struct rt_device *d)
{
	if (!d)
		return;
	if (d->default_stream) {
		rt_stream_free(d->default_stream);
		d->default_stream = NULL;
	}
	rt_memory_fini(d);
	for (unsigned i = 0; i < d->nhwq; i++) {
		unsigned qid = d->hwqs[i]->qid;

		rt_hwq_destroy(d, d->hwqs[i]);
		d->be->queue_destroy(d->bdev, qid);
	}
	if (d->bdev)
		d->be->close(d->bdev);
	rt_va_window_release(&d->va_window);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->mem_lock);
	pthread_mutex_destroy(&d->err_lock);
	free(d);
}

static vnpu_error_t device_open(int index, struct rt_device **out)
{
	struct rt_device *d = calloc(1, sizeof(*d));
	vnpu_error_t err;

	if (!d)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "allocating a device");
	d->index = index;
	d->be = rt.be;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->mem_lock, NULL);
	pthread_mutex_init(&d->err_lock, NULL);
	rt_memory_init(d);
	err = rt_va_window_reserve(&d->va_window);
	if (err) {
		device_close(d);
		return err;
	}
	err = d->be->open(index, &rt.cfg, &d->va_window, &d->bdev);
	if (err) {
		d->bdev = NULL;
		device_close(d);
		return err;
	}
	d->be->query(d->bdev, &d->info);
	err = rt_stream_new(d, VNPU_STREAM_PRIORITY_LOW, &d->default_stream);
	if (err) {
		device_close(d);
		return err;
	}
	*out = d;
	return VNPU_SUCCESS;
}

/* The backend cfg names (VNPU_BACKEND), or the detected one. */
static const struct vnpurt_backend_ops *backend_of(const struct vnpurt_config *cfg)
{
	char why[160];

	if (!strcmp(cfg->backend, "sim"))
		return &vnpurt_backend_sim;
	if (!strcmp(cfg->backend, "drm"))
		return &vnpurt_backend_drm;
	/* Auto: the real device when a vnpu accel node exists. */
	return vnpurt_backend_drm.device_count(cfg, why, sizeof(why)) > 0 ?
		       &vnpurt_backend_drm : &vnpurt_backend_sim;
}

static vnpu_error_t choose_backend(int *count)
{
	char why[160] = "";
	int n;

	rt.be = backend_of(&rt.cfg);
	n = rt.be->device_count(&rt.cfg, why, sizeof(why));
	if (n <= 0)
		return rt_fail(VNPU_ERROR_BACKEND_UNAVAILABLE,
			       "backend %s: %s", rt.be->name, why);
	*count = n < RT_MAX_DEVICES ? n : RT_MAX_DEVICES;
	return VNPU_SUCCESS;
}

static void free_stream_obj(void *obj)
{
	rt_stream_free(obj);
}

static void teardown(void)
{
	for (int i = 0; i < rt.ndev; i++)
		if (rt.devs[i])
			rt_device_wait_all(rt.devs[i]);
	rt_handles_drain(&rt.events, rt_event_free_obj);
	rt_handles_drain(&rt.streams, free_stream_obj);
	for (int i = 0; i < rt.ndev; i++) {
		device_close(rt.devs[i]);
		rt.devs[i] = NULL;
	}
	rt.ndev = 0;
	rt_handles_invalidate(&rt.events);
	rt_handles_invalidate(&rt.streams);
	rt_trace_write();
	rt_config_free(&rt.cfg);
}

vnpu_error_t vnpu_init(void)
{
	vnpu_error_t err;
	int count = 0;

	pthread_once(&atfork_once, install_atfork);
	if (forked_child)
		return fail_forked();
	pthread_mutex_lock(&rt.lock);
	if (rt.refs > 0) {
		/* A caller that never finalizes must not wrap the count round to
		 * "not initialized" for everyone else. */
		if (rt.refs == INT_MAX) {
			pthread_mutex_unlock(&rt.lock);
			return rt_fail(VNPU_ERROR_INVALID_VALUE,
				       "vnpu_init: %d references are held "
				       "without a vnpu_finalize", INT_MAX);
		}
		rt.refs++;
		pthread_mutex_unlock(&rt.lock);
		return VNPU_SUCCESS;
	}
	err = rt_config_read(&rt.cfg);
	if (!err)
		err = choose_backend(&count);
	if (err) {
		rt_config_free(&rt.cfg);
		pthread_mutex_unlock(&rt.lock);
		return err;
	}
	rt_handles_init(&rt.streams, RT_HANDLE_STREAM);
	rt_handles_init(&rt.events, RT_HANDLE_EVENT);
	if (rt.cfg.trace_path)
		rt_trace_start(rt.cfg.trace_path);
	for (int i = 0; i < count && !err; i++) {
		err = device_open(i, &rt.devs[i]);
		if (!err)
			rt.ndev = i + 1;
	}
	if (err) {
		char detail[320];

		/* Keep the failure's detail across the teardown. */
		snprintf(detail, sizeof(detail), "%s", vnpu_last_error_detail());
		teardown();
		pthread_mutex_unlock(&rt.lock);
		return rt_fail_detail(err, detail);
	}
	__atomic_store_n(&rt.refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rt.lock);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_finalize(void)
{
	if (forked_child)
		return fail_forked();
	pthread_mutex_lock(&rt.lock);
	if (rt.refs <= 0) {
		pthread_mutex_unlock(&rt.lock);
		return rt_ready();
	}
	if (rt.refs > 1) {
		rt.refs--;
		pthread_mutex_unlock(&rt.lock);
		return VNPU_SUCCESS;
	}
	__atomic_store_n(&rt.refs, 0, __ATOMIC_RELEASE);
	teardown();
	pthread_mutex_unlock(&rt.lock);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_device_count(int *count)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (!count)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "count is NULL");
	*count = rt.ndev;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_device_count_probe(int *count)
{
	struct vnpurt_config cfg;
	char why[160];
	vnpu_error_t err;
	int n;

	if (!count)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "count is NULL");
	err = rt_config_read(&cfg);
	if (err)
		return err;
	n = backend_of(&cfg)->device_count(&cfg, why, sizeof(why));
	rt_config_free(&cfg);
	*count = n <= 0 ? 0 : n < RT_MAX_DEVICES ? n : RT_MAX_DEVICES;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_set_device(int device)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (device < 0 || device >= rt.ndev)
		return rt_fail(VNPU_ERROR_NO_DEVICE,
			       "device %d: there are %d device(s)", device,
			       rt.ndev);
	current_device = device;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_get_device(int *device)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (!device)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "device is NULL");
	*device = rt_current_device()->index;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_device_properties(int device, struct vnpu_device_props *p)
{
	vnpu_error_t err = rt_ready();
	struct vnpurt_dev_info info;
	struct rt_device *d;

	if (err)
		return err;
	if (!p)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "props is NULL");
	if (device < 0 || device >= rt.ndev)
		return rt_fail(VNPU_ERROR_NO_DEVICE,
			       "device %d: there are %d device(s)", device,
			       rt.ndev);
	d = rt.devs[device];
	d->be->query(d->bdev, &info);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", info.name);
	snprintf(p->backend, sizeof(p->backend), "%s", d->be->name);
	p->hw_version = info.hw_version;
	p->fw_version = info.fw_version;
	p->cores = info.cores;
	p->queues = info.queues;
	p->vram_size = info.vram_size;
	snprintf(p->fw_build, sizeof(p->fw_build), "%s", info.fw_build);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_mem_info(size_t *free_bytes, size_t *total_bytes)
{
	vnpu_error_t err = rt_ready();
	struct vnpurt_dev_info info;
	struct rt_device *d;

	if (err)
		return err;
	if (!free_bytes || !total_bytes)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "free_bytes or total_bytes is NULL");
	d = rt_current_device();
	d->be->query(d->bdev, &info);
	*free_bytes = info.vram_free;
	*total_bytes = info.vram_size;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_device_synchronize(void)
{
	vnpu_error_t err = rt_ready();
	uint64_t t0 = rt_now_ns();
	struct rt_device *d;

	if (err)
		return err;
	d = rt_current_device();
	rt_device_wait_all(d);
	rt_trace_host("device synchronize", t0, rt_now_ns());
	pthread_mutex_lock(&d->err_lock);
	err = d->err;
	if (err) {
		rt_fail_detail(err, d->err_detail);
		d->err = VNPU_SUCCESS;
	}
	pthread_mutex_unlock(&d->err_lock);
	/* Once every failure was reported, a lost device still is. */
	if (!err)
		err = rt_device_check(d, "device synchronize");
	return err;
}
