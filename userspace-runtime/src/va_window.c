// SPDX-License-Identifier: MIT
/*
 * Unified addressing: every device VA the runtime hands out lies in a
 * window of the process's own address space that the runtime reserves
 * with mmap(PROT_NONE), so no device pointer is ever a valid host address
 * of the process and classifying a pointer can never mistake one for the
 * other. The window is found among the gaps of /proc/self/maps below the
 * device's VA limit, and taken with MAP_FIXED_NOREPLACE (a mapping made
 * meanwhile by another thread makes the attempt fail, not vanish).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define WINDOW_ALIGN (2ull << 20)

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * The lowest gap of the process in [lo, hi) holding want bytes, else the
 * largest one of at least min bytes. false when there is none.
 */
static bool find_gap(uint64_t lo, uint64_t hi, uint64_t want, uint64_t min,
		     uint64_t *start, uint64_t *size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t prev_end = lo, best = 0, best_start = 0, a, b;
	char line[512];
	bool found = false;

	if (!f)
		return false;
	for (;;) {
		bool more = fgets(line, sizeof(line), f) != NULL;
		uint64_t gap_lo, gap_hi;

		if (more) {
			if (sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) != 2)
				continue;
			/* A line longer than the buffer continues here. */
			if (!strchr(line, '\n')) {
				int c;

				while ((c = fgetc(f)) != EOF && c != '\n')
					;
			}
		} else {
			a = b = hi;
		}
		gap_lo = align_up(prev_end > lo ? prev_end : lo, WINDOW_ALIGN);
		gap_hi = (a < hi ? a : hi) & ~(WINDOW_ALIGN - 1);
		if (gap_hi > gap_lo) {
			if (gap_hi - gap_lo >= want) {
				*start = gap_lo;
				*size = want;
				found = true;
				break;
			}
			if (gap_hi - gap_lo > best) {
				best = gap_hi - gap_lo;
				best_start = gap_lo;
			}
		}
		if (b > prev_end)
			prev_end = b;
		if (!more || prev_end >= hi)
			break;
	}
	fclose(f);
	if (!found && best >= min) {
		*start = best_start;
		*size = best;
		found = true;
	}
	return found;
}

vnpu_error_t rt_va_window_reserve(uint64_t lo, uint64_t hi, uint64_t want,
				  uint64_t min, struct vnpurt_va_window *w)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t start, size;
		void *p;

		if (!find_gap(lo, hi, want, min, &start, &size))
			break;
		p = mmap((void *)(uintptr_t)start, size, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				 MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p == (void *)(uintptr_t)start) {
			w->start = start;
			w->size = size;
			return VNPU_SUCCESS;
		}
		if (p != MAP_FAILED)
			munmap(p, size); /* a kernel without NOREPLACE */
		else if (errno != EEXIST)
			return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				       "reserving the device VA window at "
				       "0x%" PRIx64 " (%" PRIu64 " MiB): %s",
				       start, size >> 20, strerror(errno));
	}
	return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
		       "no free range of at least %" PRIu64 " MiB between "
		       "0x%" PRIx64 " and 0x%" PRIx64
		       " in the process for the device VA window",
		       min >> 20, lo, hi);
}

void rt_va_window_release(struct vnpurt_va_window *w)
{
	if (w->size)
		munmap((void *)(uintptr_t)w->start, w->size);
	w->start = w->size = 0;
}
