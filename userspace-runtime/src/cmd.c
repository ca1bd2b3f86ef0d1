// SPDX-License-Identifier: MIT
/*
 * Command building: every runtime operation becomes an array of struct
 * vnpu_cmd (include/vnpu/hw_cmd_build.h) referencing device VAs, so that
 * every backend only transports command arrays.
 */
#include <string.h>

#include "internal.h"

struct vnpu_cmd rt_cmd_fill(uint64_t dst_va, uint64_t size, uint8_t value,
			    bool wide)
{
	/* Four bytes at a time when dst and size allow: same bytes. */
	return vnpu_fill_cmd(dst_va, size, wide ? value * 0x01010101u : value,
			     wide ? 4 : 1);
}

uint32_t rt_args_build(void *dst, size_t cap,
		       const struct vnpu_kargs_buffer *bufs, uint32_t nbufs,
		       const void *params, uint32_t params_size)
{
	struct vnpu_kargs_header hdr = {nbufs, params_size, 0};
	size_t size = sizeof(hdr) + (size_t)nbufs * sizeof(*bufs) + params_size;
	uint8_t *p = dst;

	if (nbufs > VNPU_KARGS_MAX_BUFFERS || size > cap ||
	    size > VNPU_KARGS_MAX_BYTES)
		return 0;
	memcpy(p, &hdr, sizeof(hdr));
	if (nbufs)
		memcpy(p + sizeof(hdr), bufs, (size_t)nbufs * sizeof(*bufs));
	if (params_size)
		memcpy(p + sizeof(hdr) + (size_t)nbufs * sizeof(*bufs), params,
		       params_size);
	return (uint32_t)size;
}
