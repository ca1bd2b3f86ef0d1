// SPDX-License-Identifier: MIT
/* Every command with data checks, and every command status code with the
 * exact condition that produces it. */
#include <math.h>

#include "fwtest.h"

static struct vnpu_simhost *h;

static void setup(void)
{
	h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
}

static void teardown(void)
{
	vnpu_simhost_destroy(h);
	h = NULL;
}

static uint32_t run0(struct vnpu_cmd cmd, struct vnpu_cpl *cpl)
{
	return ft_exec(h, 0, cmd, cpl);
}

START_TEST(nop_and_header)
{
	struct vnpu_cmd c = vnpu_nop_cmd();
	struct vnpu_cpl cpl;

	ck_assert_uint_eq(run0(c, &cpl), VNPU_STATUS_OK);
	ck_assert_uint_eq(cpl.opcode, VNPU_OP_NOP);
	c.raw[47] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_nop_cmd();
	c.hdr.flags = 2;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c.hdr.flags = 0x80;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_nop_cmd();
	c.hdr.reserved0 = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_nop_cmd();
	c.hdr.reserved1 = 0x80000000u;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	/* Unknown opcodes, even with bad flags too. */
	for (unsigned op = 0x07; op < 0x100; op += 0x1d) {
		c = vnpu_nop_cmd();
		c.hdr.opcode = (uint8_t)op;
		ck_assert_uint_eq(run0(c, &cpl),
				  op == 0x7f ? VNPU_STATUS_OK
					     : VNPU_STATUS_INVALID_OPCODE);
		ck_assert_uint_eq(cpl.opcode, op);
	}
	c.hdr.opcode = 0x7e;
	c.hdr.flags = 0xff;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_OPCODE);
}
END_TEST

START_TEST(copy_host_vram_host)
{
	uint64_t va_a, va_b, va_c;
	uint8_t *a = vnpu_simhost_alloc_map(h, 0, false, 4 * 4096, RW, &va_a);
	uint8_t *b = vnpu_simhost_alloc_map(h, 0, true, 4 * 4096, RW, &va_b);
	uint8_t *c = vnpu_simhost_alloc_map(h, 0, false, 4 * 4096, RW, &va_c);

	ft_fill_random(a, 4 * 4096, 11);
	memset(b, 0xee, 4 * 4096);
	memset(c, 0xdd, 4 * 4096);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(va_a + 100, va_b + 4000, 9000), NULL),
		VNPU_STATUS_OK);
	ck_assert_mem_eq(b + 4000, a + 100, 9000);
	ck_assert_uint_eq(b[3999], 0xee);
	ck_assert_uint_eq(b[13000], 0xee);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(va_b + 4000, va_c + 7, 9000), NULL),
		VNPU_STATUS_OK);
	ck_assert_mem_eq(c + 7, a + 100, 9000);
	ck_assert_uint_eq(c[6], 0xdd);
	ck_assert_uint_eq(c[9007], 0xdd);
	/* One byte, VRAM to VRAM. */
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va_b + 4000, va_b + 1, 1), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(b[1], a[100]);
}
END_TEST

START_TEST(copy_noncontiguous_vram)
{
	uint64_t va_src, va = 0x200000000ull;
	uint8_t *src =
		vnpu_simhost_alloc_map(h, 0, false, 4 * 4096, RW, &va_src);
	uint64_t vram = vnpu_simhost_vram_alloc(h, 4 * 4096, 4096);
	uint8_t *v = vnpu_simhost_vram_ptr(h, vram);

	/* VA page i -> VRAM page 3 - i. */
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(vnpu_simhost_map(h, 0, va + i * 4096ull, true,
						  vram + (3 - i) * 4096ull,
						  4096, RW),
				 0);
	ft_fill_random(src, 4 * 4096, 12);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va_src, va, 4 * 4096), NULL),
			  VNPU_STATUS_OK);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_mem_eq(v + (3 - i) * 4096, src + i * 4096, 4096);
	/* And back, shifted by 3 bytes across every page boundary. */
	memset(src, 0, 4 * 4096);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(va + 3, va_src, 4 * 4096 - 3), NULL),
		VNPU_STATUS_OK);
	for (unsigned i = 0; i < 4 * 4096 - 3; i++) {
		unsigned x = i + 3;

		ck_assert_uint_eq(src[i], v[(3 - x / 4096) * 4096 + x % 4096]);
	}
}
END_TEST

/*
 * The DMA engine moves runs that are contiguous in device memory in one
 * step, reading leaf tables whole: a run must still stop at the first page
 * that may not be accessed (here past a leaf table's end, 600 pages from a
 * 2 MiB boundary), with every byte before it moved and none after.
 */
/* Bytes of p[0..n) that are not v. */
static uint64_t count_not(const uint8_t *p, uint64_t n, uint8_t v)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += p[i] != v;
	return c;
}

START_TEST(runs_stop_at_the_first_bad_page)
{
	const uint64_t pages = 600, bad = 550, sz = pages * 4096;
	const uint64_t va_s = 0x300000000ull, va_d = 0x340000000ull;
	uint64_t vs = vnpu_simhost_vram_alloc(h, sz, 4096);
	uint64_t vd = vnpu_simhost_vram_alloc(h, sz, 4096);
	uint8_t *s = vnpu_simhost_vram_ptr(h, vs),
		*d = vnpu_simhost_vram_ptr(h, vd);
	struct vnpu_cpl cpl;

	ck_assert_int_eq(vnpu_simhost_map(h, 0, va_s, true, vs, sz, RW), 0);
	/* The destination: read-only at page `bad`. */
	ck_assert_int_eq(vnpu_simhost_map(h, 0, va_d, true, vd, bad * 4096, RW),
			 0);
	ck_assert_int_eq(vnpu_simhost_map(h, 0, va_d + bad * 4096, true,
					  vd + bad * 4096, 4096, RO),
			 0);
	ck_assert_int_eq(vnpu_simhost_map(h, 0, va_d + (bad + 1) * 4096, true,
					  vd + (bad + 1) * 4096,
					  sz - (bad + 1) * 4096, RW),
			 0);
	ft_fill_random(s, sz, 21);
	memset(d, 0xcc, sz);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(va_s + 5, va_d + 5, sz - 10), &cpl),
		VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(cpl.info, va_d + bad * 4096);
	ck_assert_uint_eq(ft_fault_va(h, 0), va_d + bad * 4096);
	ck_assert_mem_eq(d + 5, s + 5, bad * 4096 - 5);
	ck_assert_uint_eq(count_not(d + bad * 4096, sz - bad * 4096, 0xcc), 0);
	ft_clear_fault(h, 0);
	/* A fill runs into the same page; 2-byte pattern straight to VRAM. */
	ck_assert_uint_eq(
		run0(vnpu_fill_cmd(va_d + 2, sz - 4, 0xbeef, 2), &cpl),
		VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(cpl.info, va_d + bad * 4096);
	{
		uint64_t wrong = 0;

		for (uint64_t i = 2; i < bad * 4096; i += 2)
			wrong += d[i] != 0xef || d[i + 1] != 0xbe;
		ck_assert_uint_eq(wrong, 0);
	}
	ck_assert_uint_eq(count_not(d + bad * 4096, sz - bad * 4096, 0xcc), 0);
	ft_clear_fault(h, 0);
	/* The whole source, which is contiguous, in one command. */
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va_s, va_d, bad * 4096), NULL),
			  VNPU_STATUS_OK);
	ck_assert_mem_eq(d, s, bad * 4096);
}
END_TEST

START_TEST(copy_overlap_in_one_page)
{
	uint64_t va;
	uint8_t *b = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	uint8_t ref[4096];

	ft_fill_random(b, 4096, 13);
	memcpy(ref, b, 4096);
	memmove(ref + 10, ref, 1000);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va, va + 10, 1000), NULL),
			  VNPU_STATUS_OK);
	ck_assert_mem_eq(b, ref, 4096);
}
END_TEST

START_TEST(copy_errors)
{
	uint64_t va;
	struct vnpu_cmd c;

	vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va, va + 8, 0), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(va, va + 8, (1ull << 32) + 1), NULL),
		VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(~0ull - 10, va, 100), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va, ~0ull - 10, 100), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	c = vnpu_copy_cmd(va, va + 8, 8);
	c.copy.reserved[2] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	/* Reserved fields are checked before sizes. */
	c.copy.size = 0;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	/* No fault was recorded by any of these. */
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS), 0);
}
END_TEST

START_TEST(fill_widths)
{
	uint64_t va;
	uint8_t *b = vnpu_simhost_alloc_map(h, 0, false, 3 * 4096, RW, &va);
	uint8_t ref[3 * 4096];

	memset(b, 0x11, sizeof(ref));
	memcpy(ref, b, sizeof(ref));
	ck_assert_uint_eq(
		run0(vnpu_fill_cmd(va + 3, 5000, 0xabcdefa5, 1), NULL),
		VNPU_STATUS_OK);
	memset(ref + 3, 0xa5, 5000);
	ck_assert_mem_eq(b, ref, sizeof(ref));
	ck_assert_uint_eq(
		run0(vnpu_fill_cmd(va + 4094, 4100, 0x12345678, 2), NULL),
		VNPU_STATUS_OK);
	for (unsigned i = 0; i < 4100; i += 2) {
		ref[4094 + i] = 0x78;
		ref[4095 + i] = 0x56;
	}
	ck_assert_mem_eq(b, ref, sizeof(ref));
	ck_assert_uint_eq(
		run0(vnpu_fill_cmd(va + 4092, 8196, 0xcafebabe, 4), NULL),
		VNPU_STATUS_OK);
	for (unsigned i = 0; i < 8196; i += 4)
		memcpy(ref + 4092 + i, "\xbe\xba\xfe\xca", 4);
	ck_assert_mem_eq(b, ref, sizeof(ref));
}
END_TEST

START_TEST(fill_errors)
{
	uint64_t va;
	struct vnpu_cmd c;

	vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 16, 0, 3), NULL),
			  VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 16, 0, 0), NULL),
			  VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 16, 0, 8), NULL),
			  VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va + 2, 16, 0, 4), NULL),
			  VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va + 1, 16, 0, 2), NULL),
			  VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 18, 0, 4), NULL),
			  VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 0, 0, 1), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, (1ull << 32) + 4, 0, 4), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(~0ull - 3, 8, 0, 4), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	c = vnpu_fill_cmd(va, 16, 0, 4);
	c.fill.reserved[0] = 5;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
}
END_TEST

/* Maps one host page at the same VA in contexts 0 and 1. */
static uint64_t *shared_page(uint64_t va)
{
	uint64_t bus = vnpu_simhost_host_alloc(h, 4096, 4096);

	ck_assert_int_eq(vnpu_simhost_map(h, 0, va, false, bus, 4096, RW), 0);
	ck_assert_int_eq(vnpu_simhost_map(h, 1, va, false, bus, 4096, RW), 0);
	return vnpu_simhost_host_ptr(h, bus, 4096);
}

START_TEST(fence_across_queues)
{
	const uint64_t va = 0x300000000ull;
	uint64_t *fence = shared_page(va);
	uint64_t w1, w2, w3, s1, s2;
	struct vnpu_cpl cw, cs;

	/* Queue 1 (context 1) waits for 5; queue 0 (context 0) signals. */
	w1 = vnpu_simhost_submit(h, 1,
				 vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 5));
	w2 = vnpu_simhost_submit(h, 1, vnpu_fill_cmd(va + 8, 8, 0x77, 1));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_STATUS),
			  VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_WAITING);
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_BUSY);
	ck_assert(vnpu_sim_idle(h->sim)); /* waiting counts as idle */
	/* Other queues keep running. */
	vnpu_simhost_advance(h, 100);
	s1 = vnpu_simhost_submit(h, 0,
				 vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va, 4));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 1);
	ck_assert_uint_eq(*fence, 4);
	ck_assert(ft_qreg(h, 1, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	vnpu_simhost_advance(h, 100);
	s2 = vnpu_simhost_submit(h, 0,
				 vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va, 6));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 3);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_DONE_SEQ_LO), w2);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), s2);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_STATUS), VNPU_Q_STATUS_ENABLED);
	ck_assert_uint_eq(fence[1], 0x7777777777777777ull);
	cw = vnpu_simhost_cpl(h, 1, w1);
	cs = vnpu_simhost_cpl(h, 0, s1);
	ck_assert_uint_eq(cw.status, VNPU_STATUS_OK);
	ck_assert_uint_ge(cw.timestamp, cs.timestamp);

	/* The host may release a waiter by writing the word itself. */
	w3 = vnpu_simhost_submit(h, 1,
				 vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 100));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	*fence = 1000;
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 1);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_DONE_SEQ_LO), w3);
	/* Comparison is unsigned. */
	*fence = ~0ull;
	ck_assert_uint_eq(
		ft_exec(h, 1, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, ~0ull - 1),
			NULL),
		VNPU_STATUS_OK);
}
END_TEST

START_TEST(fence_errors)
{
	struct vnpu_cmd c;
	uint64_t va;

	vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	ck_assert_uint_eq(
		run0(vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va + 4, 1), NULL),
		VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(
		run0(vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va + 1, 1), NULL),
		VNPU_STATUS_MISALIGNED);
	c = vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 0);
	c.fence.reserved[3] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c.hdr.opcode = VNPU_OP_FENCE_SIGNAL;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
}
END_TEST

START_TEST(timestamps)
{
	struct vnpu_cmd c;
	uint64_t va;
	uint64_t *t = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &va);
	uint64_t now = vnpu_simhost_now(h);

	ck_assert_uint_eq(run0(vnpu_timestamp_cmd(va), NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(t[0], now);
	vnpu_simhost_advance(h, 12345);
	ck_assert_uint_eq(run0(vnpu_timestamp_cmd(va + 8), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(t[1], now + 12345);
	ck_assert_uint_eq(run0(vnpu_timestamp_cmd(va + 4), NULL),
			  VNPU_STATUS_MISALIGNED);
	c = vnpu_timestamp_cmd(va);
	c.timestamp.reserved[4] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
}
END_TEST

START_TEST(dma_error_does_not_fault)
{
	const uint64_t va = 0x310000000ull;
	struct vnpu_cpl cpl;
	uint64_t good;

	vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &good);
	/* A mapped page whose bus address the bus refuses. */
	ck_assert_int_eq(vnpu_simhost_map(h, 0, va, false, vnpu_simhost_hole(h),
					  4096, RW),
			 0);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va + 16, good, 8), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(cpl.info, va + 16);
	ck_assert_uint_eq(run0(vnpu_copy_cmd(good, va + 8, 8), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(cpl.info, va + 8);
	ck_assert_uint_eq(run0(vnpu_fill_cmd(va, 64, 0, 1), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(run0(vnpu_timestamp_cmd(va), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(run0(vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 1), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS), 0);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_COUNT), 0);
	ck_assert_uint_eq(run0(vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
}
END_TEST

/* Pages contiguous on the bus move in one transfer; when the bus refuses
 * the run, the report still names the first refused page, and the pages
 * before it are written. */
START_TEST(dma_error_is_page_exact_in_a_run)
{
	const uint64_t va = 0x320000000ull;
	/* three pages ending one page past the end of host memory (the
	 * simhost default of 16 MiB) */
	const uint64_t bus = vnpu_simhost_hole(h) + (16ull << 20) - 2 * 4096;
	struct vnpu_cpl cpl;
	uint64_t vram;
	uint8_t *src = vnpu_simhost_alloc_map(h, 0, true, 3 * 4096, RW, &vram);
	uint8_t *dst = vnpu_simhost_host_ptr(h, bus, 2 * 4096);

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	memset(src, 0x6b, 3 * 4096);
	memset(dst, 0, 2 * 4096);
	ck_assert_int_eq(vnpu_simhost_map(h, 0, va, false, bus, 3 * 4096, RW),
			 0);
	ck_assert_uint_eq(
		run0(vnpu_copy_cmd(vram + 100, va + 100, 3 * 4096 - 200), &cpl),
		VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(cpl.info, va + 2 * 4096);
	ck_assert_uint_eq(dst[100], 0x6b);
	ck_assert_uint_eq(dst[2 * 4096 - 1], 0x6b);
	ck_assert_uint_eq(dst[99], 0);
	/* and reading from it */
	ck_assert_uint_eq(run0(vnpu_copy_cmd(va + 8, vram, 3 * 4096 - 8), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(cpl.info, va + 2 * 4096);
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS), 0);
}
END_TEST

START_TEST(test_inject_fields)
{
	struct vnpu_cmd c = vnpu_inject_cmd(0, 0, 0);

	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c.inject.kind = 5;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_inject_cmd(VNPU_TEST_HANG, 8, 0);
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_inject_cmd(VNPU_TEST_FATAL, 0, 1);
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_inject_cmd(VNPU_TEST_MMU_FAULT, 0, 2);
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_inject_cmd(VNPU_TEST_LOST_IRQ, 0, 0);
	c.inject.reserved[1] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);
	/* Nothing was injected: the device still works. */
	ck_assert_uint_eq(run0(vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
}
END_TEST

START_TEST(test_inject_not_permitted)
{
	struct vnpu_simhost *p = ft_host(VNPU_SIM_DETERMINISTIC, false);
	struct vnpu_cmd c;

	ck_assert_uint_eq(vnpu_simhost_boot(p), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(p, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(p, 0, 0, 4, true), 0);
	for (uint32_t kind = 0; kind <= 5; kind++)
		ck_assert_uint_eq(
			ft_exec(p, 0, vnpu_inject_cmd(kind, 0, 0), NULL),
			VNPU_STATUS_NOT_PERMITTED);
	/* Reserved fields are still checked first. */
	c = vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0);
	c.inject.reserved[0] = 1;
	ck_assert_uint_eq(ft_exec(p, 0, c, NULL), VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(ft_rd(p, VNPU_REG_STATUS), VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_exec(p, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vnpu_simhost_destroy(p);
}
END_TEST

/* ---- kernel launches ----------------------------------------------------- */

static uint32_t launch(uint32_t kernel, uint32_t blocks,
		       const struct vnpu_kargs_buffer *bufs, uint32_t nbufs,
		       const void *params, uint32_t psize)
{
	return vnpu_simhost_launch(h, 0, kernel, blocks, bufs, nbufs, params,
				   psize, NULL);
}

START_TEST(launch_fill)
{
	int64_t sizes[2] = {37, 29};
	struct vnpu_kp_fill p;
	struct vnpu_kargs_buffer kb;
	uint64_t va;
	float *out =
		vnpu_simhost_alloc_map(h, 0, true, 37 * 29 * 4 + 8, RW, &va);

	memset(out, 0, 37 * 29 * 4 + 8);
	memset(&p, 0, sizeof(p));
	p.out = ft_tensor(0, VNPU_DTYPE_F32, 2, sizes);
	p.value = -3.25;
	kb = ft_kbuf(va, 37 * 29 * 4 + 8, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_FILL, 7, &kb, 1, &p, sizeof(p)),
			  VNPU_STATUS_OK);
	for (unsigned i = 0; i < 37 * 29; i++)
		ck_assert(out[i] == -3.25f);
	ck_assert(out[37 * 29] == 0.0f && out[37 * 29 + 1] == 0.0f);
}
END_TEST

/* Staged buffers in host memory: cast F32 -> I32, strided output. */
START_TEST(launch_cast_staged)
{
	const int64_t n = 3000;
	struct vnpu_kp_cast p;
	struct vnpu_kargs_buffer kb[2];
	uint64_t va_s, va_o;
	float *src = vnpu_simhost_alloc_map(h, 0, false, n * 4, RO, &va_s);
	int32_t *out = vnpu_simhost_alloc_map(h, 0, false, n * 8, RW, &va_o);
	uint64_t seed = 5;

	for (int64_t i = 0; i < n; i++)
		src[i] = (float)((int32_t)(ft_rand(&seed) % 20001) - 10000) /
			 7.0f;
	for (int64_t i = 0; i < 2 * n; i++)
		out[i] = -12345;
	memset(&p, 0, sizeof(p));
	p.src = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	p.out = ft_tensor(1, VNPU_DTYPE_I32, 1, &n);
	p.out.strides[0] = 2;
	kb[0] = ft_kbuf(va_s, n * 4, VNPU_ACCESS_READ);
	/* write-only and staged: the odd elements it does not write must
	 * survive the scatter */
	kb[1] = ft_kbuf(va_o, n * 8, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_CAST, 4, kb, 2, &p, sizeof(p)),
			  VNPU_STATUS_OK);
	for (int64_t i = 0; i < n; i++) {
		ck_assert_int_eq(out[2 * i], (int32_t)truncf(src[i]));
		ck_assert_int_eq(out[2 * i + 1], -12345);
	}
}
END_TEST

/* a (VRAM, non-contiguous pages) + alpha * b (host, broadcast row). */
START_TEST(launch_binary_add)
{
	const int64_t rows = 40, cols = 100;
	int64_t sa[2] = {rows, cols}, sb[2] = {1, cols};
	const uint64_t va_a = 0x400000000ull;
	uint64_t vram = vnpu_simhost_vram_alloc(h, 4 * 4096, 4096);
	uint64_t va_b, va_o;
	float *a = vnpu_simhost_vram_ptr(h, vram), *b, *o;
	float ref[40 * 100];
	struct vnpu_kp_binary p;
	struct vnpu_kargs_buffer kb[3];
	uint64_t seed = 77;

	for (unsigned i = 0; i < 4; i++)
		vnpu_simhost_map(h, 0, va_a + i * 4096ull, true,
				 vram + ((i + 2) % 4) * 4096ull, 4096, RO);
	b = vnpu_simhost_alloc_map(h, 0, false, cols * 4, RO, &va_b);
	o = vnpu_simhost_alloc_map(h, 0, true, rows * cols * 4, RW, &va_o);
	/* logical a[i] lives in VRAM page (i / 1024 + 2) % 4 */
	for (int64_t i = 0; i < rows * cols; i++) {
		float v = (float)(ft_rand(&seed) % 1000) / 8.0f;
		uint64_t page = (uint64_t)i / 1024, off = (uint64_t)i % 1024;

		a[((page + 2) % 4) * 1024 + off] = v;
		ref[i] = v;
	}
	for (int64_t j = 0; j < cols; j++)
		b[j] = (float)j * 0.5f - 7.0f;
	for (int64_t i = 0; i < rows * cols; i++)
		ref[i] = ref[i] + 2.0f * b[i % cols];
	memset(&p, 0, sizeof(p));
	p.op = VNPU_BINARY_ADD;
	p.alpha = 2.0;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, sa);
	p.b = ft_tensor(1, VNPU_DTYPE_F32, 2, sb);
	p.out = ft_tensor(2, VNPU_DTYPE_F32, 2, sa);
	kb[0] = ft_kbuf(va_a, rows * cols * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_b, cols * 4, VNPU_ACCESS_READ);
	kb[2] = ft_kbuf(va_o, rows * cols * 4, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_BINARY, 3, kb, 3, &p, sizeof(p)),
			  VNPU_STATUS_OK);
	for (int64_t i = 0; i < rows * cols; i++)
		ck_assert_float_eq_tol(o[i], ref[i], 1e-5f * fabsf(ref[i]));
}
END_TEST

START_TEST(launch_gemm)
{
	const int64_t m = 19, k = 23, n = 17;
	int64_t sa[2] = {m, k}, sb[2] = {k, n}, so[2] = {m, n};
	uint64_t va_a, va_b, va_o;
	float *a = vnpu_simhost_alloc_map(h, 0, false, m * k * 4, RO, &va_a);
	float *b = vnpu_simhost_alloc_map(h, 0, true, k * n * 4, RO, &va_b);
	float *o = vnpu_simhost_alloc_map(h, 0, false, m * n * 4, RW, &va_o);
	struct vnpu_kp_gemm p;
	struct vnpu_kargs_buffer kb[3];
	uint64_t seed = 99;

	for (int64_t i = 0; i < m * k; i++)
		a[i] = (float)((int)(ft_rand(&seed) % 200) - 100) / 64.0f;
	for (int64_t i = 0; i < k * n; i++)
		b[i] = (float)((int)(ft_rand(&seed) % 200) - 100) / 64.0f;
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.beta = 0.0f;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, sa);
	p.b = ft_tensor(1, VNPU_DTYPE_F32, 2, sb);
	p.out = ft_tensor(2, VNPU_DTYPE_F32, 2, so);
	kb[0] = ft_kbuf(va_a, m * k * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_b, k * n * 4, VNPU_ACCESS_READ);
	kb[2] = ft_kbuf(va_o, m * n * 4, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_GEMM, 4, kb, 3, &p, sizeof(p)),
			  VNPU_STATUS_OK);
	for (int64_t i = 0; i < m; i++) {
		for (int64_t j = 0; j < n; j++) {
			double ref = 0;

			for (int64_t x = 0; x < k; x++)
				ref += (double)a[i * k + x] * b[x * n + j];
			ck_assert_double_eq_tol(o[i * n + j], ref, 1e-4);
		}
	}
	/* An integer GEMM is a combination the kernel lacks. */
	p.a.dtype = p.b.dtype = p.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(launch(VNPU_KERNEL_GEMM, 1, kb, 3, &p, sizeof(p)),
			  VNPU_STATUS_UNSUPPORTED);
}
END_TEST

START_TEST(launch_unknown_kernel)
{
	const uint32_t ids[] = {0, VNPU_KERNEL_ID_MAX + 1, 200, 0xffffffffu};
	struct vnpu_kargs_buffer kb = ft_kbuf(0x1000, 1, VNPU_ACCESS_READ);
	struct vnpu_kp_fill p;

	memset(&p, 0, sizeof(p));
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		ck_assert_uint_eq(launch(ids[i], 1, &kb, 1, &p, sizeof(p)),
				  VNPU_STATUS_UNKNOWN_KERNEL);
}
END_TEST

/* Writes a raw argument block and launches FILL with it. */
static uint32_t raw_launch(const void *args, uint32_t size, uint32_t blocks,
			   int64_t va_delta)
{
	struct vnpu_simhost_ctx *c = &h->ctx[0];
	unsigned slot = c->args_slot++ % VNPU_SIMHOST_ARGS_SLOTS;

	memcpy(c->args_mem + slot * 4096, args, size);
	return run0(vnpu_launch_cmd(VNPU_KERNEL_FILL, blocks,
				    VNPU_SIMHOST_ARGS_VA + slot * 4096ull +
					    (uint64_t)va_delta,
				    size),
		    NULL);
}

struct fill_args {
	struct vnpu_kargs_header hdr;
	struct vnpu_kargs_buffer buf;
	struct vnpu_kp_fill p;
};

START_TEST(launch_invalid_args)
{
	int64_t n = 16;
	struct fill_args good, a;
	uint64_t va;
	struct vnpu_cmd c;

	vnpu_simhost_alloc_map(h, 0, true, 64, RW, &va);
	memset(&good, 0, sizeof(good));
	good.hdr.num_buffers = 1;
	good.hdr.params_size = sizeof(good.p);
	good.buf = ft_kbuf(va, 64, VNPU_ACCESS_WRITE);
	good.p.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	ck_assert_uint_eq(raw_launch(&good, sizeof(good), 1, 0),
			  VNPU_STATUS_OK);

	ck_assert_uint_eq(raw_launch(&good, sizeof(good), 0, 0),
			  VNPU_STATUS_INVALID_ARGS);
	ck_assert_uint_eq(raw_launch(&good, sizeof(good), 65537, 0),
			  VNPU_STATUS_INVALID_ARGS);
	ck_assert_uint_eq(raw_launch(&good, sizeof(good), 65536, 0),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(raw_launch(&good, sizeof(good) - 8, 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	ck_assert_uint_eq(raw_launch(&good, 15, 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	ck_assert_uint_eq(raw_launch(&good, sizeof(good), 1, 4),
			  VNPU_STATUS_INVALID_ARGS); /* args_va misaligned */
	c = vnpu_launch_cmd(VNPU_KERNEL_FILL, 1, VNPU_SIMHOST_ARGS_VA, 4097);
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_ARGS);
	c = vnpu_launch_cmd(VNPU_KERNEL_FILL, 1, ~0ull - 7, 64);
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_ARGS);
	c = vnpu_launch_cmd(VNPU_KERNEL_FILL, 1, VNPU_SIMHOST_ARGS_VA,
			    sizeof(good));
	c.launch.reserved[6] = 1;
	ck_assert_uint_eq(run0(c, NULL), VNPU_STATUS_INVALID_FIELD);

	a = good;
	a.hdr.reserved = 1;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.hdr.num_buffers = 9;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.hdr.num_buffers = 0; /* sizes no longer add up */
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.hdr.params_size = sizeof(struct vnpu_kp_cast);
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.buf.size = 0;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.buf.access = 0;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a.buf.access = VNPU_ACCESS_READ | 4;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.buf.reserved = 1;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.buf.va = ~0ull - 10;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	/* The kernel's own validator: tensor bigger than its buffer, index
	 * of a buffer that does not exist, unknown dtype. */
	a = good;
	a.p.out.sizes[0] = 17;
	a.p.out.strides[0] = 1;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.p.out.buffer = 1;
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	a = good;
	a.buf.access = VNPU_ACCESS_READ; /* FILL needs WRITE */
	ck_assert_uint_eq(raw_launch(&a, sizeof(a), 1, 0),
			  VNPU_STATUS_INVALID_ARGS);
	/* Nothing above faulted the context. */
	ck_assert_uint_eq(ft_creg(h, 0, VNPU_CTX_FAULT_STATUS), 0);
}
END_TEST

START_TEST(launch_too_large)
{
	const uint64_t va = 0x1000000000ull;
	const uint64_t pages = (256ull << 20) / 4096 + 1;
	uint64_t bus = vnpu_simhost_host_alloc(h, 4096, 4096);
	uint64_t va_small, size = pages * 4096;
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_fill p;
	int64_t n = 4;

	/* Every page of a 256 MiB + 4 KiB range maps the same host page. */
	for (uint64_t i = 0; i < pages; i++)
		vnpu_simhost_map(h, 0, va + i * 4096, false, bus, 4096, RW);
	memset(&p, 0, sizeof(p));
	p.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	kb[0] = ft_kbuf(va, size, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_FILL, 1, kb, 1, &p, sizeof(p)),
			  VNPU_STATUS_TOO_LARGE);
	/* Two staged buffers of 128 MiB + 4 KiB each also exceed it. */
	kb[0] = ft_kbuf(va, size / 2 + 2048, VNPU_ACCESS_WRITE);
	kb[1] = ft_kbuf(va, size / 2 + 2048, VNPU_ACCESS_READ);
	ck_assert_uint_eq(launch(VNPU_KERNEL_FILL, 1, kb, 2, &p, sizeof(p)),
			  VNPU_STATUS_TOO_LARGE);
	/* A small staged buffer is fine. */
	vnpu_simhost_alloc_map(h, 0, false, 16, RW, &va_small);
	kb[0] = ft_kbuf(va_small, 16, VNPU_ACCESS_WRITE);
	ck_assert_uint_eq(launch(VNPU_KERNEL_FILL, 1, kb, 1, &p, sizeof(p)),
			  VNPU_STATUS_OK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-cmds");
	TCase *tc = tcase_create("cmds");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nop_and_header);
	tcase_add_test(tc, copy_host_vram_host);
	tcase_add_test(tc, runs_stop_at_the_first_bad_page);
	tcase_add_test(tc, copy_noncontiguous_vram);
	tcase_add_test(tc, copy_overlap_in_one_page);
	tcase_add_test(tc, copy_errors);
	tcase_add_test(tc, fill_widths);
	tcase_add_test(tc, fill_errors);
	tcase_add_test(tc, fence_across_queues);
	tcase_add_test(tc, fence_errors);
	tcase_add_test(tc, timestamps);
	tcase_add_test(tc, dma_error_does_not_fault);
	tcase_add_test(tc, dma_error_is_page_exact_in_a_run);
	tcase_add_test(tc, test_inject_fields);
	tcase_add_test(tc, test_inject_not_permitted);
	tcase_add_test(tc, launch_fill);
	tcase_add_test(tc, launch_cast_staged);
	tcase_add_test(tc, launch_binary_add);
	tcase_add_test(tc, launch_gemm);
	tcase_add_test(tc, launch_unknown_kernel);
	tcase_add_test(tc, launch_invalid_args);
	tcase_add_test(tc, launch_too_large);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
