// SPDX-License-Identifier: MIT
/*
 * Unified addressing, built as a static non-PIE program where the build
 * allows it: globals sit at fixed low addresses (0x400000 up) and the heap
 * grows right after them, where a driver handing out device VAs from
 * 1 MiB up used to place device allocations. With hundreds of MiB of
 * device memory allocated, copies from and to globals and malloc buffers
 * must be host copies, and no device pointer may be a host address: each
 * lies in memory the process cannot use (PROT_NONE).
 */
#include <inttypes.h>
#include <stdio.h>

#include "rt_check.h"
#include "vnpurt_testing.h"

#define CHUNK	   (8u << 20)
#define MAX_CHUNKS 64

static uint8_t global_src[1 << 16];
static uint8_t global_dst[1 << 16];
static void *chunks[MAX_CHUNKS];
static int nchunks;

/* The protection of the mapping holding addr ("---p", "rw-p"), or "" when
 * nothing is mapped there. */
static void mapping_of(uintptr_t addr, char prot[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t a, b;

	prot[0] = '\0';
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char p[5];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &a, &b, p) != 3)
			continue;
		if (addr >= a && addr < b) {
			memcpy(prot, p, 5);
			break;
		}
	}
	fclose(f);
}

static void alloc_device_memory(void)
{
	size_t free_b, total_b;
	uint64_t want = 384ull << 20;

	RT_OK(vnpu_mem_info(&free_b, &total_b));
	if (want > free_b - (16u << 20))
		want = free_b - (16u << 20);
	for (nchunks = 0;
	     nchunks < MAX_CHUNKS && (uint64_t)nchunks * CHUNK < want;
	     nchunks++)
		RT_OK(vnpu_malloc(&chunks[nchunks], CHUNK));
	ck_assert_int_ge(nchunks, 8);
}

static void free_device_memory(void)
{
	for (int i = 0; i < nchunks; i++)
		RT_OK(vnpu_free(chunks[i]));
}

START_TEST(device_pointers_are_never_host_addresses)
{
	char prot[5];
	void *pinned;

	alloc_device_memory();
	RT_OK(vnpu_host_malloc(&pinned, 1u << 20));
	for (int i = 0; i < nchunks; i++) {
		for (uint64_t off = 0; off < CHUNK; off += 1u << 20) {
			mapping_of((uintptr_t)chunks[i] + off, prot);
			ck_assert_msg(strcmp(prot, "---p") == 0,
				      "device pointer %p is host memory "
				      "mapped '%s'",
				      (void *)((uint8_t *)chunks[i] + off),
				      prot);
		}
	}
	/* Pinned memory is host memory the process uses; its device VA is
	 * elsewhere, and not a host address either. */
	{
		uint64_t va;

		mapping_of((uintptr_t)pinned, prot);
		ck_assert_msg(strncmp(prot, "rw", 2) == 0,
			      "pinned memory mapped '%s'", prot);
		RT_OK(vnpurt_test_device_va(pinned, &va));
		mapping_of((uintptr_t)va, prot);
		ck_assert_str_eq(prot, "---p");
	}
	RT_OK(vnpu_host_free(pinned));
	free_device_memory();
}
END_TEST

START_TEST(globals_and_heap_copy_as_host_memory)
{
	uint8_t *small = malloc(4096), *big = malloc(3u << 20);
	void *dev;

	ck_assert_ptr_nonnull(small);
	ck_assert_ptr_nonnull(big);
	alloc_device_memory();
	RT_OK(vnpu_malloc(&dev, 4u << 20));
	for (size_t i = 0; i < sizeof(global_src); i++)
		global_src[i] = (uint8_t)(i * 7 + 1);
	/* global -> device -> heap -> device -> global */
	RT_OK(vnpu_memcpy(dev, global_src, sizeof(global_src),
			  VNPU_MEMCPY_H2D));
	RT_OK(vnpu_memcpy(big, dev, sizeof(global_src), VNPU_MEMCPY_D2H));
	ck_assert_int_eq(memcmp(big, global_src, sizeof(global_src)), 0);
	RT_OK(vnpu_memcpy(small, dev, 4096, VNPU_MEMCPY_D2H));
	ck_assert_int_eq(memcmp(small, global_src, 4096), 0);
	memset(global_dst, 0, sizeof(global_dst));
	RT_OK(vnpu_memcpy((uint8_t *)dev + 65536, big, sizeof(global_src),
			  VNPU_MEMCPY_H2D));
	RT_OK(vnpu_memcpy(global_dst, (uint8_t *)dev + 65536,
			  sizeof(global_dst), VNPU_MEMCPY_D2H));
	ck_assert_int_eq(memcmp(global_dst, global_src, sizeof(global_src)), 0);
	/* H2H between a global and the heap is a host copy. */
	RT_OK(vnpu_memcpy(global_dst, small, 4096, VNPU_MEMCPY_H2H));
	/* No host address is taken for a device one. */
	{
		uint64_t va;

		RT_ERR(vnpurt_test_device_va(global_src, &va),
		       VNPU_ERROR_INVALID_DEVICE_POINTER);
		RT_ERR(vnpurt_test_device_va(small, &va),
		       VNPU_ERROR_INVALID_DEVICE_POINTER);
		RT_ERR(vnpurt_test_device_va(big, &va),
		       VNPU_ERROR_INVALID_DEVICE_POINTER);
		RT_ERR(vnpu_memcpy(global_dst, global_src, 16, VNPU_MEMCPY_D2H),
		       VNPU_ERROR_INVALID_DEVICE_POINTER);
	}
	RT_OK(vnpu_free(dev));
	free_device_memory();
	free(small);
	free(big);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-addressing");
	TCase *tc = tcase_create("addressing");

	{
		void *heap = malloc(64);

		printf("globals at %p, heap at %p\n", (void *)global_src, heap);
		free(heap);
	}
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, device_pointers_are_never_host_addresses);
	tcase_add_test(tc, globals_and_heap_copy_as_host_memory);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
