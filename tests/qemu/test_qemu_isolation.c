// SPDX-License-Identifier: MIT
/*
 * The vnpu QEMU device against a hostile or unlucky guest, over qtest, in
 * both execution modes: DMA aimed at every kind of address (guest RAM, the
 * device's own registers and VRAM BAR, other devices' MMIO, the BIOS ROM,
 * the option ROM area, unassigned space) is refused unless it is plain
 * guest RAM, and resets (CTRL.RESET, FLR, system reset) arriving while such
 * DMA is in flight complete and leave a working device; a long launch on
 * one queue neither stops another queue's commands nor a FENCE_WAIT being
 * released; ABORT of that launch. Timing is only bounded generously; the
 * measured figures are printed. Skips (77) without a QEMU binary.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnpu_qdev.h"

#define WAIT_MS		       20000
#define PCI_EXP_DEVCTL	       8
#define PCI_EXP_DEVCTL_BCR_FLR 0x8000
#define PCI_CAP_ID_EXP	       0x10
#define RW		       (VNPU_PTE_READ | VNPU_PTE_WRITE)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t done_seq(struct vq *v, unsigned q)
{
	uint64_t lo = vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_LO));

	return (uint64_t)vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_HI)) << 32 |
	       lo;
}

/* Booted; contexts 0 and 1 with tables in guest RAM; queues 0..3 on
 * context q % 2, 64 entries (queue 0: 2^log2_q0). */
static void bring_up_q0(struct vq *v, unsigned log2_q0)
{
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	vq_ctx_init(v, 1);
	for (unsigned q = 0; q < 4; q++)
		ck_assert_uint_eq(
			vq_queue_init(v, q, q % 2, q ? 6 : log2_q0, true) & 7,
			VNPU_Q_STATUS_ENABLED);
}

static void bring_up(struct vq *v)
{
	bring_up_q0(v, 6);
}

/* Writes n commands at queue q's tail in one go (seqnos assigned), no
 * doorbell; n < entries. */
static void push_many(struct vq *v, unsigned q, const struct vnpu_cmd *cmds,
		      unsigned n)
{
	struct vq_queue *qu = &v->q[q];
	struct vnpu_cmd *ring = calloc(n, sizeof(*ring));

	ck_assert_ptr_nonnull(ring);
	ck_assert_uint_eq(qu->tail, 0);
	for (unsigned i = 0; i < n; i++) {
		ring[i] = cmds[i];
		ring[i].hdr.seqno = qu->next_seq++;
	}
	qt_memwrite(v->qt, qu->ring, ring, n * sizeof(*ring));
	qu->tail = n;
	free(ring);
}

static void reprogram_bars(struct vq *v)
{
	vq_cfg_write(v, 0x10, (uint32_t)VQ_BAR0_ADDR, 4);
	vq_cfg_write(v, 0x18, (uint32_t)VQ_BAR2_ADDR, 4);
	vq_cfg_write(v, 0x20, (uint32_t)VQ_BAR4_ADDR, 4);
	vq_cfg_write(v, 0x24, (uint32_t)(VQ_BAR4_ADDR >> 32), 4);
	vq_cfg_write(v, 0x04, 0x6, 2);
}

/* A launch command with its argument block in guest RAM (not run). */
static struct vnpu_cmd launch_cmd(struct vq *v, unsigned ctx, uint32_t kernel,
				  uint32_t blocks,
				  const struct vnpu_kargs_buffer *bufs,
				  uint32_t nbufs, const void *params,
				  uint32_t params_size)
{
	struct vnpu_kargs_header hdr = {nbufs, params_size, 0};
	size_t size = sizeof(hdr) + nbufs * sizeof(*bufs) + params_size;
	uint8_t blob[4096];
	uint64_t pa = vq_ram_alloc(v, size);
	uint64_t va = v->va_next[ctx];

	memcpy(blob, &hdr, sizeof(hdr));
	memcpy(blob + sizeof(hdr), bufs, nbufs * sizeof(*bufs));
	memcpy(blob + sizeof(hdr) + nbufs * sizeof(*bufs), params, params_size);
	qt_memwrite(v->qt, pa, blob, size);
	v->va_next[ctx] += 2 * VNPU_PAGE_SIZE;
	vq_map(v, ctx, va, false, pa, VNPU_PAGE_SIZE, VNPU_PTE_READ);
	return vnpu_launch_cmd(kernel, blocks, va, (uint32_t)size);
}

static struct vnpu_kargs_buffer kbuf(uint64_t va, uint64_t size,
				     uint32_t access)
{
	struct vnpu_kargs_buffer b;

	memset(&b, 0, sizeof(b));
	b.va = va;
	b.size = size;
	b.access = access;
	return b;
}

/*
 * A GEMM of m x n outputs (VRAM) reducing over k from 4 bytes of input
 * (both operands broadcast), in `blocks` blocks: k = 2^40 runs for years;
 * *out_off is the output's VRAM offset (all ones before it starts).
 */
static struct vnpu_cmd gemm_cmd(struct vq *v, unsigned ctx, int64_t m,
				int64_t n, int64_t k, uint32_t blocks,
				uint64_t *out_off)
{
	uint64_t in_off, va_in = vq_alloc_map(v, ctx, true, 4096, &in_off);
	uint64_t va_out = vq_alloc_map(v, ctx, true, m * n * 4, out_off);
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_gemm p;

	qt_writel(v->qt, VQ_BAR4_ADDR + in_off, 0x3f800000); /* 1.0f */
	qt_memset(v->qt, VQ_BAR4_ADDR + *out_off, 0xff, m * n * 4);
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = vnpu_tensor_f32_2d(0, m, k, 0, 0);
	p.b = vnpu_tensor_f32_2d(0, k, n, 0, 0);
	p.out = vnpu_tensor_f32_2d(1, m, n, n, 1);
	kb[0] = kbuf(va_in, 4, VNPU_ACCESS_READ);
	kb[1] = kbuf(va_out, m * n * 4, VNPU_ACCESS_WRITE);
	return launch_cmd(v, ctx, VNPU_KERNEL_GEMM, blocks, kb, 2, &p,
			  sizeof(p));
}

/* The launch on queue 0 that outlasts the test: threads mode, a kernel of
 * endless blocks; deterministic mode (whose blocks run in the main loop, so
 * that a block must end for qtest to be served), 256 blocks of about ten
 * milliseconds. Returns once it computes. */
static uint64_t start_long_launch(struct vq *v, uint64_t *out_off)
{
	struct vnpu_cmd c =
		v->deterministic
			? gemm_cmd(v, 0, 4096, 64, 1 << 18, 256, out_off)
			: gemm_cmd(v, 0, 256, 256, 1ll << 40, 1, out_off);
	uint64_t seq = vq_submit(v, 0, c);
	double end = now_ms() + WAIT_MS;

	while (qt_readl(v->qt, VQ_BAR4_ADDR + *out_off) == 0xffffffffu &&
	       now_ms() < end)
		;
	ck_assert_uint_ne(qt_readl(v->qt, VQ_BAR4_ADDR + *out_off),
			  0xffffffffu);
	return seq;
}

/* Aborts queue q and waits for Q_STATUS.ENABLED to read 0; the time. */
static double abort_queue(struct vq *v, unsigned q)
{
	double t0 = now_ms(), end = t0 + WAIT_MS;

	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	while ((vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_STATUS)) &
		VNPU_Q_STATUS_ENABLED) &&
	       now_ms() < end)
		;
	ck_assert_uint_eq(
		vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_STATUS)) &
			(VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_ABORTED),
		VNPU_Q_STATUS_ABORTED);
	return now_ms() - t0;
}

/* ---- queues do not wait for each other ---------------------------------- */

/* While queue 0 runs a long launch, queue 1 runs a FILL, a copy and a
 * short launch; then ABORT ends queue 0's launch with its record. */
START_TEST(t_abort_long_launch)
{
	struct vq *v = vq_start(_i, "vram-size=64M,cores=2", NULL);
	uint64_t out_off, seq0, seq1, ha, hb, va, vb, vf, f_off;
	struct vnpu_kargs_buffer kb;
	struct vnpu_kp_fill fill;
	struct vnpu_cpl c;
	const int64_t nf = 4096;
	double t0, ms;

	bring_up(v);
	va = vq_alloc_map(v, 1, false, 1 << 20, &ha);
	vb = vq_alloc_map(v, 1, false, 1 << 20, &hb);
	vf = vq_alloc_map(v, 1, true, nf * 4, &f_off);
	seq0 = start_long_launch(v, &out_off);
	t0 = now_ms();
	vq_push(v, 1, vnpu_fill_cmd(va, 1 << 20, 0x5a5a5a5a, 4));
	vq_push(v, 1, vnpu_copy_cmd(va, vb, 1 << 20));
	memset(&fill, 0, sizeof(fill));
	fill.out = vnpu_tensor_f32_2d(0, 1, nf, nf, 1);
	fill.value = 2.0;
	kb = kbuf(vf, nf * 4, VNPU_ACCESS_WRITE);
	seq1 = vq_submit(v, 1,
			 launch_cmd(v, 1, VNPU_KERNEL_FILL, 2, &kb, 1, &fill,
				    sizeof(fill)));
	ck_assert(vq_wait(v, 1, seq1, WAIT_MS));
	fprintf(stderr,
		"qemu isolation (%s): queue 1's fill, copy and launch beside "
		"queue 0's long launch: %.1f ms\n",
		vq_mode_name(_i), now_ms() - t0);
	for (uint64_t s = 1; s <= seq1; s++)
		ck_assert_uint_eq(vq_cpl(v, 1, s).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(qt_readl(v->qt, hb + (1 << 20) - 4), 0x5a5a5a5a);
	ck_assert_uint_eq(qt_readl(v->qt, VQ_BAR4_ADDR + f_off), 0x40000000);
	ck_assert_uint_eq(done_seq(v, 0), 0);

	ms = abort_queue(v, 0);
	fprintf(stderr,
		"qemu isolation (%s): ABORT of the long launch: "
		"%.2f ms (with qtest round trips)\n",
		vq_mode_name(_i), ms);
	c = vq_cpl(v, 0, seq0);
	ck_assert_uint_eq(c.seqno, seq0);
	ck_assert_uint_eq(c.status, VNPU_STATUS_ABORTED);
	ck_assert_uint_eq(done_seq(v, 0), seq0);
	/* re-enabled, the queue works; queue 1 never stopped */
	ck_assert_uint_eq(vq_queue_init(v, 0, 0, 6, true) & 0xf,
			  VNPU_Q_STATUS_ENABLED);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vq_exec(v, 1, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vq_stop(v);
}
END_TEST

/* A FENCE_WAIT on queue 1 is released by the guest, then by queue 2's
 * signal, while queue 0's long launch computes. */
START_TEST(t_fence_during_long_launch)
{
	struct vq *v = vq_start(_i, "vram-size=64M,cores=2", NULL);
	uint64_t out_off, pa, va, seq, sig;
	double t0;

	bring_up(v);
	/* a fence page mapped at the same VA in both contexts */
	va = vq_alloc_map(v, 1, false, 4096, &pa);
	v->va_next[0] = va + 2 * VNPU_PAGE_SIZE;
	vq_map(v, 0, va, false, pa, 4096, RW);
	start_long_launch(v, &out_off);
	seq = vq_submit(v, 1, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 1));
	for (double end = now_ms() + WAIT_MS;
	     !(vq_rd(v, VNPU_QUEUE_REG(1, VNPU_Q_STATUS)) &
	       VNPU_Q_STATUS_WAITING) &&
	     now_ms() < end;)
		;
	ck_assert(vq_rd(v, VNPU_QUEUE_REG(1, VNPU_Q_STATUS)) &
		  VNPU_Q_STATUS_WAITING);
	t0 = now_ms();
	qt_writeq(v->qt, pa, 1);
	ck_assert(vq_wait(v, 1, seq, WAIT_MS));
	fprintf(stderr,
		"qemu isolation (%s): FENCE_WAIT released by the guest "
		"during a long launch after %.2f ms\n",
		vq_mode_name(_i), now_ms() - t0);
	ck_assert_uint_eq(vq_cpl(v, 1, seq).status, VNPU_STATUS_OK);
	seq = vq_submit(v, 1, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 2));
	sig = vq_submit(v, 2, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va, 2));
	ck_assert(vq_wait(v, 1, seq, WAIT_MS));
	ck_assert_uint_eq(vq_cpl(v, 1, seq).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(vq_cpl(v, 2, sig).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(done_seq(v, 0), 0);
	abort_queue(v, 0);
	vq_stop(v);
}
END_TEST

/* Threads mode: reset during a kernel whose two blocks (both cores) would
 * run for years returns promptly; the vCPU (here qtest) is held for that
 * time only. */
START_TEST(t_reset_latency)
{
	struct vq *v = vq_start(0, "vram-size=64M,cores=2", NULL);
	unsigned exp = vq_find_cap(v, PCI_CAP_ID_EXP);
	uint32_t count0 = vq_rd(v, VNPU_REG_RESET_COUNT), snap;
	uint64_t out_off;
	double t0, ctrl_ms, flr_ms;

	bring_up(v);
	vq_submit(v, 0, gemm_cmd(v, 0, 256, 256, 1ll << 40, 2, &out_off));
	for (double end = now_ms() + WAIT_MS;
	     qt_readl(v->qt, VQ_BAR4_ADDR + out_off) == 0xffffffffu &&
	     now_ms() < end;)
		;
	t0 = now_ms();
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ctrl_ms = now_ms() - t0;
	snap = qt_readl(v->qt, VQ_BAR4_ADDR + out_off + 4);
	usleep(50000);
	ck_assert_uint_eq(qt_readl(v->qt, VQ_BAR4_ADDR + out_off + 4), snap);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS), 0);

	v->vram_next = 0;
	bring_up(v);
	vq_submit(v, 0, gemm_cmd(v, 0, 256, 256, 1ll << 40, 2, &out_off));
	for (double end = now_ms() + WAIT_MS;
	     qt_readl(v->qt, VQ_BAR4_ADDR + out_off) == 0xffffffffu &&
	     now_ms() < end;)
		;
	t0 = now_ms();
	vq_cfg_write(v, exp + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_BCR_FLR, 2);
	flr_ms = now_ms() - t0;
	fprintf(stderr,
		"qemu isolation: CTRL.RESET during an endless kernel %.2f ms, "
		"FLR %.2f ms (qtest round trip included)\n",
		ctrl_ms, flr_ms);
	reprogram_bars(v);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_RESET_COUNT), count0 + 2);
	ck_assert_uint_lt((unsigned)ctrl_ms, 5000);
	ck_assert_uint_lt((unsigned)flr_ms, 5000);
	v->vram_next = 0;
	bring_up(v);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vq_stop(v);
}
END_TEST

/* ---- DMA targets -------------------------------------------------------- */

struct target {
	const char *name;
	uint64_t addr; /* guest physical, page aligned */
	bool ram;      /* plain guest RAM: accepted */
	bool memory;   /* refused memory: its contents are checked */
};

/* What the device's bus sees on q35 with -nodefaults and our BARs. */
static const struct target targets[] = {
	{"guest RAM", 0, true, false}, /* allocated per test */
	{"own BAR0 (MMIO)", VQ_BAR0_ADDR, false, false},
	{"own VRAM BAR (RAM BAR)", VQ_BAR4_ADDR, false, true},
	{"HPET (another device's MMIO)", 0xfed00000, false, false},
	{"IOAPIC (another device's MMIO)", 0xfec00000, false, false},
	{"MSI window", 0xfee00000, false, false},
	{"BIOS ROM", 0xfffc0000, false, true},
	{"BIOS ROM below 1 MiB", 0xe0000, false, true},
	{"option ROM area", 0xc0000, false, true},
	{"unassigned space", 0x40000000, false, false},
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* Maps one page of the target at a fresh VA of context ctx. */
static uint64_t map_target(struct vq *v, unsigned ctx, const struct target *t)
{
	uint64_t va = v->va_next[ctx];
	uint64_t pa = t->ram ? vq_ram_alloc(v, 4096) : t->addr;

	v->va_next[ctx] += 2 * VNPU_PAGE_SIZE;
	vq_map(v, ctx, va, false, pa, 4096, RW);
	return va;
}

/* A write (FILL) and a read (COPY to RAM) of each target: accepted for
 * guest RAM only; the other targets are refused as DMA_ERROR (info = the
 * VA) without side effects on them. */
START_TEST(t_dma_targets)
{
	struct vq *v = vq_start(_i, NULL, NULL);
	uint64_t rpa, rva;

	bring_up(v);
	rva = vq_alloc_map(v, 0, false, 4096, &rpa);
	for (unsigned i = 0; i < NTARGETS; i++) {
		const struct target *t = &targets[i];
		uint64_t va = map_target(v, 0, t);
		uint32_t before = t->memory ? qt_readl(v->qt, t->addr + 64) : 0;
		uint32_t want = t->ram ? VNPU_STATUS_OK : VNPU_STATUS_DMA_ERROR;
		struct vnpu_cpl c;

		ck_assert_msg(vq_exec(v, 0,
				      vnpu_fill_cmd(va, 4096, 0xa5a5a5a5, 4),
				      &c) == want,
			      "%s: write status %u", t->name, c.status);
		if (!t->ram)
			ck_assert_uint_eq(c.info, va);
		if (t->memory)
			ck_assert_msg(qt_readl(v->qt, t->addr + 64) == before,
				      "%s: written", t->name);
		ck_assert_msg(vq_exec(v, 0, vnpu_copy_cmd(va, rva, 4096), &c) ==
				      want,
			      "%s: read status %u", t->name, c.status);
		/* a refused page is not the context's fault */
		ck_assert_uint_eq(
			vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS)), 0);
	}
	ck_assert(qt_alive(v->qt));
	vq_stop(v);
}
END_TEST

enum reset_kind { RESET_CTRL, RESET_FLR, RESET_SYSTEM, RESET_KINDS };

static const char *const reset_names[] = {"CTRL.RESET", "FLR", "system reset"};

/*
 * For every target: 4000 page-sized FILLs of it on queue 0 and 60 copies
 * from it on queue 1 (and 8 MiB fills of RAM on queue 2), rung, and the
 * reset at once, while they are in flight (a write to ROM was an MMIO
 * dispatch taking the BQL on the simulator's thread, while the reset held
 * it waiting for that thread). The reset completes, nothing is written
 * after it, and the device works again.
 */
#define FILLS 4000

static void reset_during_dma(int mode, enum reset_kind kind)
{
	struct vq *v = vq_start(mode, "vram-size=16M", NULL);
	unsigned exp = vq_find_cap(v, PCI_CAP_ID_EXP);
	static struct vnpu_cmd fills[FILLS];

	for (unsigned i = 0; i < NTARGETS; i++) {
		const struct target *t = &targets[i];
		uint64_t rpa, rva, bpa, bva, tva0, tva1;
		unsigned count = vq_rd(v, VNPU_REG_RESET_COUNT);
		double t0;

		bring_up_q0(v, 12);
		rva = vq_alloc_map(v, 1, false, 4096, &rpa);
		bva = vq_alloc_map(v, 0, false, 8 << 20, &bpa);
		tva0 = map_target(v, 0, t);
		tva1 = map_target(v, 1, t);
		for (unsigned k = 0; k < FILLS; k++)
			fills[k] =
				vnpu_fill_cmd(tva0, 4096, 0x01010101u * k, 4);
		push_many(v, 0, fills, FILLS);
		for (int k = 0; k < 60; k++)
			vq_push(v, 1, vnpu_copy_cmd(tva1, rva, 4096));
		for (int k = 0; k < 4; k++)
			vq_push(v, 2, vnpu_fill_cmd(bva, 8 << 20, k, 4));
		vq_ring(v, 0);
		vq_ring(v, 1);
		vq_ring(v, 2);
		t0 = now_ms();
		if (kind == RESET_CTRL) {
			vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
		} else if (kind == RESET_FLR) {
			vq_cfg_write(v, exp + PCI_EXP_DEVCTL,
				     PCI_EXP_DEVCTL_BCR_FLR, 2);
			reprogram_bars(v);
		} else {
			qt_system_reset(v->qt);
			reprogram_bars(v);
		}
		ck_assert_msg(now_ms() - t0 < 10000, "%s: %s took %.0f ms",
			      t->name, reset_names[kind], now_ms() - t0);
		ck_assert_msg(vq_rd(v, VNPU_REG_RESET_COUNT) == count + 1,
			      "%s: %s", t->name, reset_names[kind]);
		ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS), 0);
		ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_STATUS)),
				  0);
		/* quiet: the completion rings do not change any more */
		{
			uint8_t a[64 * VNPU_CPL_SIZE], b[64 * VNPU_CPL_SIZE];

			qt_memread(v->qt, v->q[1].cpl, a, sizeof(a));
			usleep(20000);
			qt_clock_step(v->qt, 1000000);
			qt_memread(v->qt, v->q[1].cpl, b, sizeof(b));
			ck_assert_mem_eq(a, b, sizeof(a));
		}
	}
	/* and the device works */
	bring_up(v);
	{
		uint64_t pa, va = vq_alloc_map(v, 0, false, 4096, &pa);

		ck_assert_uint_eq(
			vq_exec(v, 0, vnpu_fill_cmd(va, 4096, 0x77, 1), NULL),
			VNPU_STATUS_OK);
		ck_assert_uint_eq(qt_readl(v->qt, pa + 4092), 0x77777777);
	}
	vq_stop(v);
}

START_TEST(t_reset_ctrl_during_dma)
{
	reset_during_dma(_i, RESET_CTRL);
}
END_TEST

START_TEST(t_reset_flr_during_dma)
{
	reset_during_dma(_i, RESET_FLR);
}
END_TEST

START_TEST(t_reset_system_during_dma)
{
	reset_during_dma(_i, RESET_SYSTEM);
}
END_TEST

static int mode_lo, mode_hi = VQ_MODES;

static Suite *isolation_suite(void)
{
	Suite *s = suite_create("qemu-isolation");
	TCase *tc = tcase_create("isolation");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, t_dma_targets, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_ctrl_during_dma, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_flr_during_dma, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_system_during_dma, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_abort_long_launch, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_fence_during_long_launch, mode_lo, mode_hi);
	if (mode_lo == 0)
		tcase_add_test(tc, t_reset_latency);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *mode = getenv("VNPU_EXEC_MODE");
	SRunner *sr;
	int failed;

	if (!qt_qemu_binary()) {
		printf("SKIP: no QEMU binary (set VNPU_QEMU or -Dqemu=PATH)\n");
		return 77;
	}
	/* One mode per run when asked (the meson tests), else both. */
	if (mode && !strcmp(mode, vq_mode_name(0)))
		mode_hi = 1;
	else if (mode && !strcmp(mode, vq_mode_name(1)))
		mode_lo = 1;
	sr = srunner_create(isolation_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
