// SPDX-License-Identifier: MIT
/* Status codes, their strings and the thread-local last error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "vnpu/hw_status.h"

static const char *const error_names[VNPU_ERROR_COUNT] = {
	[VNPU_SUCCESS] = "success",
	[VNPU_ERROR_INVALID_VALUE] = "invalid value",
	[VNPU_ERROR_NULL_POINTER] = "null pointer",
	[VNPU_ERROR_NOT_INITIALIZED] = "runtime not initialized",
	[VNPU_ERROR_NO_DEVICE] = "no such device",
	[VNPU_ERROR_BACKEND_UNAVAILABLE] = "backend not available",
	[VNPU_ERROR_OUT_OF_MEMORY] = "out of memory",
	[VNPU_ERROR_INVALID_DEVICE_POINTER] = "invalid device pointer",
	[VNPU_ERROR_INVALID_HOST_POINTER] = "invalid pinned host pointer",
	[VNPU_ERROR_INVALID_COPY_KIND] = "invalid copy kind",
	[VNPU_ERROR_INVALID_HANDLE] = "invalid handle",
	[VNPU_ERROR_NOT_READY] = "not ready",
	[VNPU_ERROR_UNKNOWN_KERNEL] = "unknown kernel",
	[VNPU_ERROR_LAUNCH_FAILURE] = "kernel launch failure",
	[VNPU_ERROR_UNSUPPORTED] = "unsupported dtype or format",
	[VNPU_ERROR_INVALID_DESCRIPTOR] = "invalid tensor descriptor",
	[VNPU_ERROR_MMU_FAULT] = "device MMU fault",
	[VNPU_ERROR_DEVICE_ERROR] = "device error",
	[VNPU_ERROR_DEVICE_RESET] = "device reset",
	[VNPU_ERROR_TIMEOUT] = "timeout",
	[VNPU_ERROR_LAUNCH_TIMEOUT] = "launch timed out",
	[VNPU_ERROR_FORKED] = "runtime started before fork()",
};

const char *vnpu_error_string(vnpu_error_t err)
{
	if ((unsigned)err >= VNPU_ERROR_COUNT)
		return "unknown status";
	return error_names[err];
}

static _Thread_local struct {
	vnpu_error_t err;
	char detail[320];
} last;

vnpu_error_t vnpu_get_last_error(void)
{
	vnpu_error_t err = last.err;

	last.err = VNPU_SUCCESS;
	return err;
}

vnpu_error_t vnpu_peek_last_error(void)
{
	return last.err;
}

const char *vnpu_last_error_detail(void)
{
	/* The detail outlives vnpu_get_last_error(): read it after. */
	if (last.detail[0])
		return last.detail;
	return vnpu_error_string(last.err);
}

vnpu_error_t rt_fail_detail(vnpu_error_t err, const char *detail)
{
	last.err = err;
	snprintf(last.detail, sizeof(last.detail), "%s", detail);
	return err;
}

vnpu_error_t rt_fail(vnpu_error_t err, const char *fmt, ...)
{
	va_list ap;

	last.err = err;
	va_start(ap, fmt);
	vsnprintf(last.detail, sizeof(last.detail), fmt, ap);
	va_end(ap);
	return err;
}

vnpu_error_t rt_fail_prefix(vnpu_error_t err, const char *fmt, ...)
{
	char cause[sizeof(last.detail)];
	va_list ap;
	int n;

	/* The cause is in the buffer the prefix is written to. */
	snprintf(cause, sizeof(cause), "%s", last.detail);
	last.err = err;
	va_start(ap, fmt);
	n = vsnprintf(last.detail, sizeof(last.detail), fmt, ap);
	va_end(ap);
	if (n >= 0 && cause[0]) {
		size_t len = strlen(last.detail);

		/* As much of ": cause" as fits. */
		for (const char *c = ": "; *c && len + 1 < sizeof(last.detail);)
			last.detail[len++] = *c++;
		for (const char *c = cause;
		     *c && len + 1 < sizeof(last.detail);)
			last.detail[len++] = *c++;
		last.detail[len] = '\0';
	}
	return err;
}

vnpu_error_t rt_status_error(uint32_t status)
{
	switch (status) {
	case VNPU_STATUS_OK:
		return VNPU_SUCCESS;
	case VNPU_STATUS_MMU_FAULT:
	case VNPU_STATUS_CONTEXT_FAULTED:
		return VNPU_ERROR_MMU_FAULT;
	case VNPU_STATUS_UNKNOWN_KERNEL:
		return VNPU_ERROR_UNKNOWN_KERNEL;
	case VNPU_STATUS_INVALID_ARGS:
	case VNPU_STATUS_TOO_LARGE:
		return VNPU_ERROR_LAUNCH_FAILURE;
	case VNPU_STATUS_UNSUPPORTED:
		return VNPU_ERROR_UNSUPPORTED;
	case VNPU_STATUS_ABORTED:
		return VNPU_ERROR_LAUNCH_TIMEOUT;
	case VNPURT_STATUS_DEVICE_RESET:
	case VNPURT_STATUS_DEVICE_LOST:
		return VNPU_ERROR_DEVICE_RESET;
	default:
		return VNPU_ERROR_DEVICE_ERROR;
	}
}

const char *rt_status_name(uint32_t status)
{
	static const char *const names[VNPU_STATUS_COUNT] = {
		[VNPU_STATUS_OK] = "OK",
		[VNPU_STATUS_INVALID_OPCODE] = "INVALID_OPCODE",
		[VNPU_STATUS_INVALID_FIELD] = "INVALID_FIELD",
		[VNPU_STATUS_MISALIGNED] = "MISALIGNED",
		[VNPU_STATUS_OUT_OF_RANGE] = "OUT_OF_RANGE",
		[VNPU_STATUS_MMU_FAULT] = "MMU_FAULT",
		[VNPU_STATUS_CONTEXT_FAULTED] = "CONTEXT_FAULTED",
		[VNPU_STATUS_UNKNOWN_KERNEL] = "UNKNOWN_KERNEL",
		[VNPU_STATUS_INVALID_ARGS] = "INVALID_ARGS",
		[VNPU_STATUS_UNSUPPORTED] = "UNSUPPORTED",
		[VNPU_STATUS_NOT_PERMITTED] = "NOT_PERMITTED",
		[VNPU_STATUS_DMA_ERROR] = "DMA_ERROR",
		[VNPU_STATUS_TOO_LARGE] = "TOO_LARGE",
	};

	if (status == VNPURT_STATUS_DEVICE_RESET)
		return "DEVICE_RESET";
	if (status == VNPURT_STATUS_DEVICE_LOST)
		return "DEVICE_LOST";
	return status < VNPU_STATUS_COUNT ? names[status] : "UNKNOWN";
}
