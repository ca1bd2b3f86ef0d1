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
#include "vnpu/hw_mmu.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define WINDOW_ALIGN (2ull << 20)
/* From 4 GiB up (clear of a non-PIE program's image and heap), 128 GiB when
 * the process has room, at least 1 GiB. Where nothing is free up there
 * (AddressSanitizer's shadow covers 2 GiB..16 TiB), the largest free range
 * of at least 256 MiB between 16 MiB and 4 GiB. */
#define WINDOW_LO (4ull << 30)
#define WINDOW_BYTES (128ull << 30)
#define WINDOW_MIN (1ull << 30)
#define WINDOW_LOW_LO (16ull << 20)
#define WINDOW_LOW_MIN (256ull << 20)

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

/* Reserves want bytes (else the largest range of at least min) of the
 * process in [lo, hi): 1 on success, 0 when nothing fits, -errno. */
static int try_reserve(uint64_t lo, uint64_t hi, uint64_t want, uint64_t min,
		       struct vnpurt_va_window *w)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t start, size;
		void *p;

		if (!find_gap(lo, hi, want, min, &start, &size))
			return 0;
		p = mmap((void *)(uintptr_t)start, size, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				 MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p == (void *)(uintptr_t)start) {
			w->start = start;
			w->size = size;
			return 1;
		}
		if (p != MAP_FAILED)
			munmap(p, size); /* a kernel without NOREPLACE */
		else if (errno != EEXIST)
			return -errno;
		/* EEXIST: another thread mapped there meanwhile; look again */
	}
	return 0;
}

vnpu_error_t rt_va_window_reserve(struct vnpurt_va_window *w)
{
	int r = try_reserve(WINDOW_LO, VNPU_VA_LIMIT, WINDOW_BYTES, WINDOW_MIN,
			    w);

	if (r == 0)
		r = try_reserve(WINDOW_LOW_LO, WINDOW_LO, WINDOW_BYTES,
				WINDOW_LOW_MIN, w);
	if (r > 0)
		return VNPU_SUCCESS;
	if (r < 0)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "reserving the device VA window: %s",
			       strerror(-r));
	return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
		       "no free range in the process for the device VA "
		       "window: none of %llu MiB between 4 GiB and the device's "
		       "VA limit, none of %llu MiB between 16 MiB and 4 GiB",
		       (unsigned long long)(WINDOW_MIN >> 20),
		       (unsigned long long)(WINDOW_LOW_MIN >> 20));
}

void rt_va_window_release(struct vnpurt_va_window *w)
{
	if (w->size)
		munmap((void *)(uintptr_t)w->start, w->size);
	w->start = w->size = 0;
}
