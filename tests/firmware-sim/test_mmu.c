// SPDX-License-Identifier: MIT
/* MMU: every fault reason with the fault registers, isolation between
 * contexts, CONTEXT_FAULTED and recovery, TLB invalidation semantics,
 * tables in VRAM, and launches that fault writing nothing. */
#include "fwtest.h"

static struct vnpu_simhost *h;

static void setup(void)
{
	h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	ft_wr(h, VNPU_REG_EVENT_STATUS, 0xffffffff);
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	vnpu_simhost_irq_clear_counts(h);
}

static void teardown(void)
{
	vnpu_simhost_destroy(h);
	h = NULL;
}

/* Runs cmd on queue q, expects MMU_FAULT at va with reason/write, checks
 * every fault register, then clears the fault. */
static void expect_fault(unsigned q, struct vnpu_cmd cmd, uint64_t va,
			 uint32_t reason, bool write)
{
	unsigned ctx = q % 2;
	uint32_t count = ft_creg(h, ctx, VNPU_CTX_FAULT_COUNT);
	unsigned events = vnpu_simhost_irq_count(h, 0);
	struct vnpu_cpl cpl;
	uint32_t fs;

	ck_assert_uint_eq(ft_exec(h, q, cmd, &cpl), VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(cpl.info, va);
	fs = ft_creg(h, ctx, VNPU_CTX_FAULT_STATUS);
	ck_assert(fs & VNPU_FAULT_PENDING);
	ck_assert_uint_eq(!!(fs & VNPU_FAULT_WRITE), write);
	ck_assert_uint_eq(VNPU_FAULT_REASON(fs), reason);
	ck_assert_uint_eq(VNPU_FAULT_QUEUE(fs), q);
	ck_assert_uint_eq(ft_fault_va(h, ctx), va);
	ck_assert_uint_eq(ft_creg(h, ctx, VNPU_CTX_FAULT_COUNT), count + 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_LO), 1u << ctx);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_HI), 0);
	ck_assert(ft_rd(h, VNPU_REG_EVENT_STATUS) & VNPU_EVENT_MMU_FAULT);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events + 1);
	ft_clear_fault(h, ctx);
	ck_assert_uint_eq(ft_creg(h, ctx, VNPU_CTX_FAULT_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_LO), 0);
	ck_assert_uint_eq(ft_fault_va(h, ctx), va); /* kept for the driver */
}

START_TEST(fault_reasons)
{
	uint64_t ro, wo, ok;
	const uint64_t bad = 0x500000000ull;

	vnpu_simhost_alloc_map(h, 0, false, 4096, RO, &ro);
	vnpu_simhost_alloc_map(h, 0, false, 4096, WO, &wo);
	vnpu_simhost_alloc_map(h, 0, true, 8192, RW, &ok);

	/* not mapped: source, destination, on queue 0 and 2 */
	expect_fault(0, vnpu_copy_cmd(0x123456, ok, 8), 0x123456,
		     VNPU_FAULT_NOT_MAPPED, false);
	expect_fault(2, vnpu_copy_cmd(ok, 0x7654320, 8), 0x7654320,
		     VNPU_FAULT_NOT_MAPPED, true);
	/* permission */
	expect_fault(0, vnpu_fill_cmd(ro + 8, 8, 0, 1), ro + 8,
		     VNPU_FAULT_PERMISSION, true);
	expect_fault(0, vnpu_copy_cmd(wo, ok, 8), wo, VNPU_FAULT_PERMISSION,
		     false);
	expect_fault(0, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, wo, 1), wo,
		     VNPU_FAULT_PERMISSION, false);
	expect_fault(0, vnpu_timestamp_cmd(ro), ro, VNPU_FAULT_PERMISSION,
		     true);
	/* bad PTE: reserved leaf bit, leaf-only bit in a table entry, VRAM
	 * page beyond VRAM, intermediate VRAM table beyond VRAM */
	vnpu_simhost_set_pte(h, 0, bad, 2,
			     0x1000 | VNPU_PTE_VALID | VNPU_PTE_READ |
				     VNPU_PTE_VRAM | (1ull << 5));
	expect_fault(0, vnpu_copy_cmd(bad, ok, 8), bad, VNPU_FAULT_BAD_PTE,
		     false);
	vnpu_simhost_set_pte(h, 0, bad, 2,
			     0x1000 | VNPU_PTE_VALID | VNPU_PTE_READ |
				     VNPU_PTE_VRAM | (1ull << 52));
	expect_fault(0, vnpu_copy_cmd(bad, ok, 8), bad, VNPU_FAULT_BAD_PTE,
		     false);
	vnpu_simhost_set_pte(h, 0, bad, 2,
			     (16ull << 20) | VNPU_PTE_VALID | VNPU_PTE_READ |
				     VNPU_PTE_VRAM);
	expect_fault(0, vnpu_copy_cmd(bad, ok, 8), bad, VNPU_FAULT_BAD_PTE,
		     false);
	vnpu_simhost_set_pte(h, 0, bad + (1ull << 30), 1,
			     (64ull << 20) | VNPU_PTE_VALID | VNPU_PTE_VRAM);
	expect_fault(0, vnpu_copy_cmd(bad + (1ull << 30), ok, 8),
		     bad + (1ull << 30), VNPU_FAULT_BAD_PTE, false);
	vnpu_simhost_set_pte(h, 0, bad + (2ull << 30), 1,
			     0x2000 | VNPU_PTE_VALID | VNPU_PTE_READ);
	expect_fault(0, vnpu_copy_cmd(bad + (2ull << 30), ok, 8),
		     bad + (2ull << 30), VNPU_FAULT_BAD_PTE, false);
	/* the last VRAM page is fine */
	vnpu_simhost_set_pte(h, 0, bad, 2,
			     ((16ull << 20) - 4096) | VNPU_PTE_VALID |
				     VNPU_PTE_READ | VNPU_PTE_VRAM);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(bad, ok, 8), NULL),
			  VNPU_STATUS_OK);
	/* table DMA: a level-1 table at a bus address the bus refuses */
	vnpu_simhost_set_pte(h, 0, bad + (3ull << 30), 1,
			     vnpu_simhost_hole(h) | VNPU_PTE_VALID);
	expect_fault(0, vnpu_copy_cmd(ok, bad + (3ull << 30), 8),
		     bad + (3ull << 30), VNPU_FAULT_TABLE_DMA, true);
	/* VA range */
	expect_fault(0, vnpu_copy_cmd(ok, VNPU_VA_LIMIT - 8, 16), VNPU_VA_LIMIT,
		     VNPU_FAULT_VA_RANGE, true);
	expect_fault(0, vnpu_fill_cmd(VNPU_VA_LIMIT + 64, 8, 0, 1),
		     VNPU_VA_LIMIT + 64, VNPU_FAULT_VA_RANGE, true);
	expect_fault(0, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, ~0ull - 7, 1),
		     ~0ull - 7, VNPU_FAULT_VA_RANGE, true);
	/* injected: mapped -> INJECTED, unmapped -> the walk's reason */
	expect_fault(0, vnpu_inject_cmd(VNPU_TEST_MMU_FAULT, ok + 24, 1),
		     ok + 24, VNPU_FAULT_INJECTED, true);
	expect_fault(0, vnpu_inject_cmd(VNPU_TEST_MMU_FAULT, ro, 1), ro,
		     VNPU_FAULT_PERMISSION, true);
	expect_fault(0, vnpu_inject_cmd(VNPU_TEST_MMU_FAULT, 0x999000, 0),
		     0x999000, VNPU_FAULT_NOT_MAPPED, false);
}
END_TEST

START_TEST(pt_base_reserved_bits)
{
	uint32_t lo = ft_creg(h, 1, VNPU_CTX_PT_BASE_LO);

	ft_wr(h, VNPU_CTX_REG(1, VNPU_CTX_PT_BASE_LO), lo | 0x10);
	vnpu_simhost_tlb_invalidate(h, 1);
	expect_fault(1, vnpu_fill_cmd(VNPU_SIMHOST_VA_START, 8, 0, 1),
		     VNPU_SIMHOST_VA_START, VNPU_FAULT_BAD_PTE, true);
}
END_TEST

START_TEST(isolation_and_recovery)
{
	uint64_t va0, va1, wait_seq, s1, s2;
	uint8_t *b0 = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va0);
	uint8_t *b1 = vnpu_simhost_alloc_map(h, 1, true, 4096, RW, &va1);
	struct vnpu_cmd bogus;
	struct vnpu_cpl c;

	/* Queue 2 (context 0) waits on a fence and has a fill queued. */
	wait_seq = vnpu_simhost_submit(
		h, 2, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va0, 1));
	s1 = vnpu_simhost_submit(h, 2, vnpu_fill_cmd(va0 + 8, 8, 0xaa, 1));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	/* Queue 0 (context 0) faults. */
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(0x5000, va0, 8), NULL),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_LO), 1);
	/* Every queue of context 0 completes with CONTEXT_FAULTED, the
	 * waiter too, without executing. */
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_LO), s1);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 2, wait_seq).status,
			  VNPU_STATUS_CONTEXT_FAULTED);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 2, s1).status,
			  VNPU_STATUS_CONTEXT_FAULTED);
	ck_assert_uint_eq(b0[8], 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_fill_cmd(va0, 8, 1, 1), &c),
			  VNPU_STATUS_CONTEXT_FAULTED);
	ck_assert_uint_eq(c.info, 0);
	ck_assert_uint_eq(b0[0], 0);
	/* even an invalid command is not looked at */
	bogus = vnpu_nop_cmd();
	bogus.hdr.opcode = 0x55;
	ck_assert_uint_eq(ft_exec(h, 2, bogus, NULL),
			  VNPU_STATUS_CONTEXT_FAULTED);
	/* Context 1 never notices. */
	ck_assert_uint_eq(ft_exec(h, 1, vnpu_fill_cmd(va1, 8, 0x5a, 1), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(b1[7], 0x5a);
	ck_assert_uint_eq(ft_creg(h, 1, VNPU_CTX_FAULT_STATUS), 0);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_COUNT), 1);
	/* Only the fault's W1C bit recovers; other bits do nothing. */
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), ~VNPU_FAULT_PENDING);
	ck_assert_uint_ne(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS), 0);
	ft_clear_fault(h, 0);
	s2 = vnpu_simhost_submit(h, 2, vnpu_fill_cmd(va0, 8, 0x33, 1));
	ck_assert_int_eq(vnpu_simhost_wait(h, 2, s2, 1000), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 2, s2).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(b0[0], 0x33);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_COUNT), 1);
}
END_TEST

/* Translations are cached until TLB_INVALIDATE (or context disable). */
START_TEST(tlb_invalidation)
{
	/* VPN not congruent to dst's modulo the TLB size (64 entries, direct
	 * mapped), so the only way out of the cache is the invalidation. */
	const uint64_t va = 0x600000000ull + 5 * 4096;
	uint64_t dst, p1 = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint64_t p2 = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint8_t *v1 = vnpu_simhost_vram_ptr(h, p1);
	uint8_t *v2 = vnpu_simhost_vram_ptr(h, p2);
	uint8_t *d = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &dst);

	memset(v1, 1, 4096);
	memset(v2, 2, 4096);
	vnpu_simhost_map(h, 0, va, true, p1, 4096, RO);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 1);
	/* Remapped in memory: the device still uses the cached page. */
	vnpu_simhost_map(h, 0, va, true, p2, 4096, RO);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 1);
	vnpu_simhost_tlb_invalidate(h, 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 2);
	/* Unmapped: stale until invalidated, then a fault. */
	vnpu_simhost_unmap(h, 0, va, 4096);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
			  VNPU_STATUS_OK);
	vnpu_simhost_tlb_invalidate(h, 0);
	expect_fault(0, vnpu_copy_cmd(va, dst, 8), va, VNPU_FAULT_NOT_MAPPED,
		     false);
	/* Permissions are cached with the translation: a page made
	 * read-only keeps accepting writes until the invalidation. */
	vnpu_simhost_map(h, 0, va, true, p1, 4096, RW);
	vnpu_simhost_tlb_invalidate(h, 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_fill_cmd(va, 8, 7, 1), NULL),
			  VNPU_STATUS_OK);
	vnpu_simhost_map(h, 0, va, true, p1, 4096, RO);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_fill_cmd(va, 8, 8, 1), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(v1[0], 8);
	/* Disabling the context drops the cache; a disabled context maps
	 * nothing. */
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_CTRL), 0);
	expect_fault(0, vnpu_fill_cmd(va, 8, 9, 1), va, VNPU_FAULT_NOT_MAPPED,
		     true);
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_CTRL), VNPU_CTX_CTRL_ENABLE);
	expect_fault(0, vnpu_fill_cmd(va, 8, 9, 1), va, VNPU_FAULT_PERMISSION,
		     true);
	ck_assert_uint_eq(v1[0], 8);
	/* Other contexts' caches are untouched by an invalidation. */
	ck_assert_uint_eq(ft_creg(h, 1, VNPU_CTX_CTRL), VNPU_CTX_CTRL_ENABLE);
}
END_TEST

START_TEST(tables_in_vram)
{
	uint64_t va, src;
	uint8_t *s, *d;

	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 2, true), 0);
	ck_assert(ft_creg(h, 2, VNPU_CTX_PT_BASE_LO) & VNPU_PT_BASE_VRAM);
	ft_wr(h, VNPU_QUEUE_REG(3, VNPU_Q_CTRL), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 3, 2, 4, true), 0);
	s = vnpu_simhost_alloc_map(h, 2, false, 8192, RW, &src);
	d = vnpu_simhost_alloc_map(h, 2, true, 8192, RW, &va);
	ft_fill_random(s, 8192, 3);
	ck_assert_uint_eq(ft_exec(h, 3, vnpu_copy_cmd(src, va, 8192), NULL),
			  VNPU_STATUS_OK);
	ck_assert_mem_eq(d, s, 8192);
	/* A VRAM root beyond VRAM is a bad PTE. */
	ft_wr(h, VNPU_CTX_REG(2, VNPU_CTX_PT_BASE_LO), VNPU_PT_BASE_VRAM);
	ft_wr(h, VNPU_CTX_REG(2, VNPU_CTX_PT_BASE_HI), 1);
	vnpu_simhost_tlb_invalidate(h, 2);
	ck_assert_uint_eq(ft_exec(h, 3, vnpu_copy_cmd(src, va, 8), NULL),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(
		VNPU_FAULT_REASON(ft_creg(h, 2, VNPU_CTX_FAULT_STATUS)),
		VNPU_FAULT_BAD_PTE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_LO), 1u << 2);
}
END_TEST

/* A DMA copy moves page by page: the pages before the fault are written. */
START_TEST(copy_fault_midway)
{
	uint64_t src, dst;
	uint8_t *s = vnpu_simhost_alloc_map(h, 0, false, 3 * 4096, RW, &src);
	uint8_t *d = vnpu_simhost_alloc_map(h, 0, true, 3 * 4096, RW, &dst);

	ft_fill_random(s, 3 * 4096, 4);
	memset(d, 0, 3 * 4096);
	vnpu_simhost_unmap(h, 0, dst + 2 * 4096, 4096);
	expect_fault(0, vnpu_copy_cmd(src, dst, 3 * 4096), dst + 2 * 4096,
		     VNPU_FAULT_NOT_MAPPED, true);
	ck_assert_mem_eq(d, s, 2 * 4096);
	ck_assert_uint_eq(d[2 * 4096], 0);
}
END_TEST

/* A launch maps every buffer before the kernel runs: a fault in the last
 * buffer leaves the first untouched. */
START_TEST(launch_fault_writes_nothing)
{
	int64_t n = 64;
	uint64_t va_out, va_x;
	float *out = vnpu_simhost_alloc_map(h, 0, true, 256, RW, &va_out);
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_fill p;
	struct vnpu_cpl c;

	vnpu_simhost_alloc_map(h, 0, false, 8192, RW, &va_x);
	vnpu_simhost_unmap(h, 0, va_x + 4096, 4096);
	memset(out, 0, 256);
	memset(&p, 0, sizeof(p));
	p.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	p.value = 1.0;
	kb[0] = ft_kbuf(va_out, 256, VNPU_ACCESS_WRITE);
	kb[1] = ft_kbuf(va_x + 100, 5000, VNPU_ACCESS_READ);
	ck_assert_uint_eq(vnpu_simhost_launch(h, 0, VNPU_KERNEL_FILL, 1, kb, 2,
					      &p, sizeof(p), &c),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(c.info, va_x + 4096);
	for (int i = 0; i < 64; i++)
		ck_assert(out[i] == 0.0f);
	ft_clear_fault(h, 0);
	/* A buffer running past the VA limit. */
	kb[1] = ft_kbuf(VNPU_VA_LIMIT - 16, 32, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(vnpu_simhost_launch(h, 0, VNPU_KERNEL_FILL, 1, kb, 2,
					      &p, sizeof(p), &c),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(c.info, VNPU_VA_LIMIT);
	ck_assert_uint_eq(
		VNPU_FAULT_REASON(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS)),
		VNPU_FAULT_VA_RANGE);
	ft_clear_fault(h, 0);
	/* The argument block itself unmapped. */
	expect_fault(0, vnpu_launch_cmd(VNPU_KERNEL_FILL, 1, 0x8000, 64),
		     0x8000, VNPU_FAULT_NOT_MAPPED, false);
	/* A write buffer on a read-only page. */
	vnpu_simhost_map(h, 0, va_x + 4096, false,
			 vnpu_simhost_host_alloc(h, 4096, 4096), 4096, RO);
	kb[1] = ft_kbuf(va_x + 4096, 16, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(vnpu_simhost_launch(h, 0, VNPU_KERNEL_FILL, 1, kb, 2,
					      &p, sizeof(p), &c),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS),
			  VNPU_FAULT_PENDING | VNPU_FAULT_WRITE |
				  VNPU_FAULT_PERMISSION << 8);
	for (int i = 0; i < 64; i++)
		ck_assert(out[i] == 0.0f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-mmu");
	TCase *tc = tcase_create("mmu");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fault_reasons);
	tcase_add_test(tc, pt_base_reserved_bits);
	tcase_add_test(tc, isolation_and_recovery);
	tcase_add_test(tc, tlb_invalidation);
	tcase_add_test(tc, tables_in_vram);
	tcase_add_test(tc, copy_fault_midway);
	tcase_add_test(tc, launch_fault_writes_nothing);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
