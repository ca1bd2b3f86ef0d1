// SPDX-License-Identifier: MIT
/*
 * Copies: every kind (H2D, D2H, D2D, H2H), from pageable and from pinned
 * host memory, synchronous and on a stream, and memset.
 *
 *  - Pageable memory (malloc) is staged through the runtime's pinned
 *    buffers; pinned memory (vnpu_host_malloc) is read and written by the
 *    device directly, so asynchronous copies from it need no staging.
 *  - vnpu_memcpy returns when the copy is done. vnpu_memcpy_async is ordered
 *    on its stream: the data is there once the stream got that far
 *    (synchronize, or an event recorded after it).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vnpu_runtime.h>

#include "example_check.h"

#define BYTES (3u << 20) /* larger than one staging chunk */

static int failures;

static void expect(const char *what, const void *got, const void *want,
		   size_t n)
{
	bool ok = memcmp(got, want, n) == 0;

	printf("  %-52s %s\n", what, ok ? "ok" : "MISMATCH");
	failures += !ok;
}

int main(void)
{
	unsigned char *pageable = malloc(BYTES), *back = malloc(BYTES);
	unsigned char *pinned, *pinned_back, *pattern = malloc(BYTES);
	struct vnpu_mem_stats stats;
	vnpu_stream_t stream;
	void *d1, *d2;

	if (!pageable || !back || !pattern)
		return 1;
	for (size_t i = 0; i < BYTES; i++)
		pageable[i] = (unsigned char)(i * 131 + 7);

	CHECK(vnpu_init());
	CHECK(vnpu_malloc(&d1, BYTES));
	CHECK(vnpu_malloc(&d2, BYTES));
	CHECK(vnpu_host_malloc((void **)&pinned, BYTES));
	CHECK(vnpu_host_malloc((void **)&pinned_back, BYTES));
	CHECK(vnpu_stream_create(&stream, VNPU_STREAM_PRIORITY_LOW));
	printf("copies of %u bytes:\n", BYTES);

	/* Synchronous, pageable host memory: H2D, D2D, D2H. */
	CHECK(vnpu_memcpy(d1, pageable, BYTES, VNPU_MEMCPY_H2D));
	CHECK(vnpu_memcpy(d2, d1, BYTES, VNPU_MEMCPY_D2D));
	memset(back, 0, BYTES);
	CHECK(vnpu_memcpy(back, d2, BYTES, VNPU_MEMCPY_D2H));
	expect("pageable H2D -> D2D -> D2H (synchronous)", back, pageable,
	       BYTES);

	/* H2H: a host copy, ordered like the others when async. */
	CHECK(vnpu_memcpy(pinned, pageable, BYTES, VNPU_MEMCPY_H2H));
	expect("H2H into pinned memory", pinned, pageable, BYTES);

	/* Asynchronous from pinned memory: the device reads it directly, so
	 * `pinned` must stay unchanged until the stream is past the copy. */
	CHECK(vnpu_memset(d1, 0, BYTES));
	CHECK(vnpu_memcpy_async(d1, pinned, BYTES, VNPU_MEMCPY_H2D, stream));
	CHECK(vnpu_memcpy_async(pinned_back, d1, BYTES, VNPU_MEMCPY_D2H,
				stream));
	CHECK(vnpu_stream_synchronize(stream));
	expect("pinned H2D -> D2H on a stream", pinned_back, pageable, BYTES);

	/* Asynchronous from pageable memory: the H2D call returns once the
	 * source was consumed (staged), the D2H destination is written when
	 * the stream reaches the copy. */
	memset(back, 0, BYTES);
	CHECK(vnpu_memcpy_async(d2, pageable, BYTES, VNPU_MEMCPY_H2D, stream));
	CHECK(vnpu_memcpy_async(back, d2, BYTES, VNPU_MEMCPY_D2H, stream));
	CHECK(vnpu_stream_synchronize(stream));
	expect("pageable H2D -> D2H on a stream", back, pageable, BYTES);

	/* memset: bytes set to (uint8_t)value, synchronous and on a stream;
	 * a sub-range through pointer arithmetic inside the allocation. */
	CHECK(vnpu_memset(d1, 0x3c, BYTES));
	CHECK(vnpu_memset_async((char *)d1 + 4096, 0x100 + 0x7f, 1000, stream));
	CHECK(vnpu_stream_synchronize(stream));
	CHECK(vnpu_memcpy(back, d1, BYTES, VNPU_MEMCPY_D2H));
	memset(pattern, 0x3c, BYTES);
	memset(pattern + 4096, 0x7f, 1000);
	expect("memset, then memset_async of a sub-range", back, pattern,
	       BYTES);

	CHECK(vnpu_mem_stats(&stats));
	printf("device memory: %llu bytes in use, peak %llu, cached %llu\n",
	       (unsigned long long)stats.in_use, (unsigned long long)stats.peak,
	       (unsigned long long)stats.cached);

	CHECK(vnpu_stream_destroy(stream));
	CHECK(vnpu_host_free(pinned));
	CHECK(vnpu_host_free(pinned_back));
	CHECK(vnpu_free(d1));
	CHECK(vnpu_free(d2));
	CHECK(vnpu_finalize());
	free(pageable);
	free(back);
	free(pattern);
	printf(failures ? "FAILED\n" : "OK\n");
	return failures != 0;
}
