// SPDX-License-Identifier: MIT
/* The thread's dispatch error: code, message, and a sequence number that
 * tells a boxed call whether its kernel failed. */
#include <stdarg.h>
#include <stdio.h>

#include "dispatch_internal.h"

static _Thread_local enum vnpu_at_error err_code;
static _Thread_local char err_msg[1024];
static _Thread_local uint64_t err_seq;

enum vnpu_at_error vnpu_at_error_code(void)
{
	return err_code;
}

const char *vnpu_at_error_message(void)
{
	return err_code ? err_msg : "";
}

void vnpu_at_error_clear(void)
{
	err_code = VNPU_AT_OK;
	err_msg[0] = 0;
}

void *vnpu_at_error_set(enum vnpu_at_error code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	err_code = code;
	err_seq++;
	return NULL;
}

uint64_t vnpu_error_seq(void)
{
	return err_seq;
}

void vnpu_error_retract(uint64_t seq)
{
	err_code = VNPU_AT_OK;
	err_msg[0] = 0;
	err_seq = seq;
}

void *vnpu_null_arg(const struct vnpu_op *op, const char *name)
{
	if (err_code != VNPU_AT_OK) {
		err_seq++;	/* the call failed too */
		return NULL;
	}
	return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				 "%s: argument '%s' is None (expected a Tensor)",
				 op->name, name);
}
