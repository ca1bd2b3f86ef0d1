// SPDX-License-Identifier: MIT
/* The npu as the dispatcher sees it, in one place: libvnpurt started once
 * per process, and each thread's current device and stream (what
 * torch.npu.set_device and torch.npu.stream set), which kernels launch on
 * and storages are allocated for. */
#include <pthread.h>

#include "dispatch_internal.h"
#include "vnpu_runtime.h"

static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static vnpu_error_t rt_status = VNPU_ERROR_NOT_INITIALIZED;
static _Thread_local void *cur_stream;
static _Thread_local int cur_device;

static void rt_init(void)
{
	rt_status = vnpu_init();
}

bool vnpu_npu_runtime_init(void)
{
	pthread_once(&rt_once, rt_init);
	if (rt_status != VNPU_SUCCESS) {
		vnpu_at_error_set(VNPU_AT_ERR_DEVICE,
				  "npu: the runtime failed to start: %s (%s)",
				  vnpu_error_string(rt_status),
				  vnpu_last_error_detail());
		return false;
	}
	return true;
}

bool vnpu_npu_ready(void)
{
	static _Thread_local bool device_set;

	if (!vnpu_npu_runtime_init())
		return false;
	if (!device_set) {
		vnpu_error_t e = vnpu_set_device(cur_device);

		if (e != VNPU_SUCCESS) {
			vnpu_at_error_set(VNPU_AT_ERR_DEVICE, "npu:%d: %s",
					  cur_device, vnpu_error_string(e));
			return false;
		}
		device_set = true;
	}
	return true;
}

bool vnpu_at_npu_start(void)
{
	return vnpu_npu_runtime_init();
}

bool vnpu_at_npu_set_device(int index)
{
	if (!vnpu_npu_runtime_init())
		return false;
	if (vnpu_set_device(index) != VNPU_SUCCESS) {
		vnpu_at_error_set(VNPU_AT_ERR_DEVICE, "npu:%d does not exist", index);
		return false;
	}
	cur_device = index;
	return true;
}

int vnpu_npu_current_device(void)
{
	return cur_device;
}

void vnpu_at_npu_set_stream(void *stream)
{
	cur_stream = stream;
}

void *vnpu_at_npu_stream(void)
{
	return cur_stream;
}

vnpu_stream_t vnpu_npu_stream(void)
{
	return (vnpu_stream_t)cur_stream;
}

struct vnpu_at_device vnpu_npu_device(void)
{
	return VNPU_AT_DEV_NPU((int8_t)cur_device);
}
