// SPDX-License-Identifier: MIT
/*
 * The vnpu QEMU device, driven over the qtest protocol: PCI identity and
 * BARs, boot handshake, queues, commands with data checks, kernels, MSI-X
 * and INTx, MMU faults, every status/fatal/error code, DMA aimed at the
 * device's own BAR, resets in the middle of work (CTRL.RESET, FLR, system
 * reset), hang injection and the heartbeat, and fuzz reproducers. Every
 * device test runs in both execution modes (loop index 0 threads,
 * 1 deterministic), or the one $VNPU_EXEC_MODE names. Skips (77) without a
 * QEMU binary ($VNPU_QEMU).
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vnpu_qdev.h"

#define WAIT_MS 20000
#define PCI_EXP_DEVCTL 8
#define PCI_EXP_DEVCTL_BCR_FLR 0x8000
#define PCI_CAP_ID_EXP 0x10

/* Boots the firmware, context 0 with page tables in guest RAM, queue 0. */
static struct vq *up(int mode, const char *opts)
{
	struct vq *v = vq_start(mode, opts, NULL);

	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	ck_assert_uint_eq(vq_queue_init(v, 0, 0, 6, true) & 7,
			  VNPU_Q_STATUS_ENABLED);
	return v;
}

static void reprogram_bars(struct vq *v)
{
	vq_cfg_write(v, 0x10, (uint32_t)VQ_BAR0_ADDR, 4);
	vq_cfg_write(v, 0x18, (uint32_t)VQ_BAR2_ADDR, 4);
	vq_cfg_write(v, 0x20, (uint32_t)VQ_BAR4_ADDR, 4);
	vq_cfg_write(v, 0x24, (uint32_t)(VQ_BAR4_ADDR >> 32), 4);
	vq_cfg_write(v, 0x04, 0x6, 2);
}

/* CRC-32 (zlib polynomial), bitwise: independent of the device's. */
static uint32_t crc32_ref(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

static void fix_header_crc(uint8_t *img)
{
	struct vnpu_fw_header h;

	memcpy(&h, img, sizeof(h));
	h.header_crc = 0;
	h.header_crc = crc32_ref(&h, sizeof(h));
	memcpy(img, &h, sizeof(h));
}

/* ---- identity ------------------------------------------------------------- */

static uint64_t bar_size(struct vq *v, unsigned reg, bool is64)
{
	uint32_t orig = vq_cfg_read(v, reg, 4), lo, hi = 0xffffffffu;
	uint32_t orig_hi = is64 ? vq_cfg_read(v, reg + 4, 4) : 0;
	uint64_t mask;

	vq_cfg_write(v, reg, 0xffffffffu, 4);
	lo = vq_cfg_read(v, reg, 4);
	if (is64) {
		vq_cfg_write(v, reg + 4, 0xffffffffu, 4);
		hi = vq_cfg_read(v, reg + 4, 4);
		vq_cfg_write(v, reg + 4, orig_hi, 4);
	}
	vq_cfg_write(v, reg, orig, 4);
	mask = ((uint64_t)hi << 32) | (lo & ~0xfu);
	return ~mask + 1;
}

START_TEST(t_identity)
{
	struct vq *v = vq_start(_i, "queues=3,cores=2,contexts=5", NULL);
	uint32_t caps, bar4;

	ck_assert_uint_eq(vq_cfg_read(v, 0, 2), VNPU_PCI_VENDOR_ID);
	ck_assert_uint_eq(vq_cfg_read(v, 2, 2), VNPU_PCI_DEVICE_ID);
	ck_assert_uint_eq(vq_cfg_read(v, 8, 1), VNPU_PCI_REVISION);
	ck_assert_uint_eq(vq_cfg_read(v, 0x0a, 2), VNPU_PCI_CLASS);
	ck_assert_uint_eq(vq_cfg_read(v, 0x3d, 1), 1); /* INTA */
	ck_assert_uint_eq(bar_size(v, 0x10, false), VNPU_REGS_SIZE);
	bar4 = vq_cfg_read(v, 0x20, 4);
	ck_assert_uint_eq(bar4 & 0xf, 0xc); /* 64-bit prefetchable memory */
	ck_assert_uint_eq(bar_size(v, 0x20, true), 16u << 20);
	ck_assert_uint_ne(v->msix_cap, 0);
	/* MSI-X table size field = vectors - 1, table in BAR2. */
	ck_assert_uint_eq((vq_cfg_read(v, v->msix_cap + 2, 2) & 0x7ff) + 1,
			  VNPU_MSIX_VECTORS(3));
	ck_assert_uint_eq(vq_cfg_read(v, v->msix_cap + 4, 4) & 7,
			  VNPU_BAR_MSIX);
	/* PCIe capability with function-level reset. */
	unsigned exp = vq_find_cap(v, PCI_CAP_ID_EXP);
	ck_assert_uint_ne(exp, 0);
	ck_assert_uint_ne(vq_cfg_read(v, exp + 4, 4) & (1u << 28), 0);

	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ID), VNPU_ID_VALUE);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HW_VERSION),
			  VNPU_HW_ABI_MAJOR << 16 | VNPU_HW_ABI_MINOR);
	caps = vq_rd(v, VNPU_REG_CAPS);
	ck_assert_uint_eq(VNPU_CAPS_QUEUES(caps), 3);
	ck_assert_uint_eq(VNPU_CAPS_CORES(caps), 2);
	ck_assert_uint_eq(VNPU_CAPS_RING_LOG2_MAX(caps), VNPU_RING_LOG2_MAX);
	ck_assert_uint_eq(caps & VNPU_CAPS_TEST_MODE, 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_NUM_CONTEXTS), 5);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_VRAM_SIZE_LO), 16u << 20);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_VRAM_SIZE_HI), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT_PERIOD_US), 1000);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_BOOT_STATUS), VNPU_BOOT_OFF);
	vq_wr(v, VNPU_REG_SCRATCH, 0xa5a55a5a);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_SCRATCH), 0xa5a55a5a);
	/* Only 32-bit accesses reach registers: others read 0, are ignored. */
	ck_assert_uint_eq(qt_readb(v->qt, VQ_BAR0_ADDR), 0);
	ck_assert_uint_eq(qt_readw(v->qt, VQ_BAR0_ADDR), 0);
	qt_writeb(v->qt, VQ_BAR0_ADDR + VNPU_REG_SCRATCH, 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_SCRATCH), 0xa5a55a5a);
	/* Unaligned and unknown offsets read 0. */
	ck_assert_uint_eq(vq_rd(v, 0x2), 0);
	ck_assert_uint_eq(vq_rd(v, 0xfff0), 0);
	/* A write to a read-only register is an error the device logs. */
	vq_wr(v, VNPU_REG_ID, 1);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ID), VNPU_ID_VALUE);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	/* VRAM is plain memory behind BAR4. */
	qt_writel(v->qt, VQ_BAR4_ADDR + 0x1000, 0xcafef00d);
	ck_assert_uint_eq(qt_readl(v->qt, VQ_BAR4_ADDR + 0x1000), 0xcafef00d);
	vq_stop(v);
}
END_TEST

START_TEST(t_test_mode_caps)
{
	struct vq *v = vq_start(_i, "test-mode=on,vram-size=32M", NULL);

	ck_assert_uint_ne(vq_rd(v, VNPU_REG_CAPS) & VNPU_CAPS_TEST_MODE, 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_VRAM_SIZE_LO), 32u << 20);
	ck_assert_uint_eq(bar_size(v, 0x20, true), 32u << 20);
	vq_stop(v);
}
END_TEST

/* ---- boot ------------------------------------------------------------------ */

START_TEST(t_boot)
{
	uint32_t size;
	uint8_t *img = vq_fw_image(&size), *bad;
	struct vnpu_fw_header h;
	struct vq *v;

	ck_assert_ptr_nonnull(img);
	ck_assert_uint_gt(size, sizeof(h));
	memcpy(&h, img, sizeof(h));
	bad = malloc(size);

	v = vq_start(_i, NULL, NULL);
	uint32_t resets = vq_rd(v, VNPU_REG_RESET_COUNT);
	/* Bad payload checksum. */
	memcpy(bad, img, size);
	bad[size - 1] ^= 0x40;
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_CHECKSUM);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_READY, 0);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_EVENT_STATUS) &
				  VNPU_EVENT_BOOT_DONE, 0);
	/* Wrong ABI major version (header CRC made valid again). */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	memcpy(bad, img, size);
	((struct vnpu_fw_header *)bad)->abi_major = VNPU_HW_ABI_MAJOR + 1;
	fix_header_crc(bad);
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_VERSION);
	/* Newer minor version. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	memcpy(bad, img, size);
	((struct vnpu_fw_header *)bad)->abi_minor = VNPU_HW_ABI_MINOR + 1;
	fix_header_crc(bad);
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_VERSION);
	/* Bad magic, bad header CRC, too small. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	memcpy(bad, img, size);
	bad[0] ^= 1;
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_MAGIC);
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	memcpy(bad, img, size);
	bad[40] ^= 1; /* build id: covered by the header CRC only */
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_HEADER);
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ck_assert_uint_eq(vq_boot_image(v, img, size, 16), VNPU_BOOT_ERR_SIZE);
	/* A manifest naming a kernel the device lacks (CRCs valid). */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	memcpy(bad, img, size);
	{
		struct vnpu_fw_header *bh = (struct vnpu_fw_header *)bad;
		uint32_t unknown = 99;

		memcpy(bad + bh->header_size, &unknown, sizeof(unknown));
		bh->payload_crc = crc32_ref(bad + bh->header_size,
					    size - bh->header_size);
		fix_header_crc(bad);
	}
	ck_assert_uint_eq(vq_boot_image(v, bad, size, size),
			  VNPU_BOOT_ERR_MANIFEST);
	/* The image "at" the device's own registers: the DMA fails. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	vq_wr(v, VNPU_REG_FW_ADDR_LO, (uint32_t)VQ_BAR0_ADDR);
	vq_wr(v, VNPU_REG_FW_ADDR_HI, 0);
	vq_wr(v, VNPU_REG_FW_SIZE, size);
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !vq_rd(v, VNPU_REG_BOOT_STATUS) && vq_now_ms() < end;)
		;
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_BOOT_STATUS), VNPU_BOOT_ERR_DMA);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ID), VNPU_ID_VALUE);
	/* The good image. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ck_assert_uint_eq(vq_boot_image(v, img, size, size), VNPU_BOOT_READY);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_READY, 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_FW_VERSION), h.fw_version);
	/* Booting again while READY. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     vq_rd(v, VNPU_REG_BOOT_STATUS) == VNPU_BOOT_READY &&
	     vq_now_ms() < end;)
		;
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_BOOT_STATUS), VNPU_BOOT_ERR_STATE);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_RESET_COUNT), resets + 8);
	vq_stop(v);
	free(bad);
	free(img);
}
END_TEST

/* ---- commands with data ------------------------------------------------------ */

START_TEST(t_nop_fill_copy)
{
	struct vq *v = up(_i, NULL);
	struct vnpu_cpl cpl;
	uint64_t vram_off, ram_pa, ram2_pa;
	uint64_t vva = vq_alloc_map(v, 0, true, 3 * 4096, &vram_off);
	uint64_t hva = vq_alloc_map(v, 0, false, 3 * 4096, &ram_pa);
	uint64_t hva2 = vq_alloc_map(v, 0, false, 3 * 4096, &ram2_pa);
	uint8_t src[3 * 4096], out[3 * 4096];

	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), &cpl),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(cpl.seqno, 1);
	ck_assert_uint_eq(cpl.opcode, VNPU_OP_NOP);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_HEAD)), 1);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_TAIL)), 1);

	/* FILL 16-bit pattern into VRAM, read through BAR4. */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(vva + 2, 1000, 0xbeef, 2),
				  &cpl),
			  VNPU_STATUS_OK);
	qt_memread(v->qt, VQ_BAR4_ADDR + vram_off, out, 1004);
	ck_assert_uint_eq(out[0] | out[1], 0);
	for (int i = 2; i < 1002; i += 2)
		ck_assert(out[i] == 0xef && out[i + 1] == 0xbe);
	ck_assert_uint_eq(out[1002] | out[1003], 0);

	/* DMA_COPY guest RAM -> VRAM (crossing pages, odd offsets). */
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	qt_memwrite(v->qt, ram_pa, src, sizeof(src));
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(hva + 5, vva + 17, 9000),
				  NULL),
			  VNPU_STATUS_OK);
	qt_memread(v->qt, VQ_BAR4_ADDR + vram_off + 17, out, 9000);
	ck_assert_mem_eq(out, src + 5, 9000);
	/* VRAM -> guest RAM. */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(vva + 17, hva2 + 1, 9000),
				  NULL),
			  VNPU_STATUS_OK);
	qt_memread(v->qt, ram2_pa + 1, out, 9000);
	ck_assert_mem_eq(out, src + 5, 9000);
	ck_assert_uint_eq(qt_readb(v->qt, ram2_pa), 0);
	ck_assert_uint_eq(qt_readb(v->qt, ram2_pa + 9001), 0);

	/* FENCE_SIGNAL and TIMESTAMP write host memory. */
	ck_assert_uint_eq(vq_exec(v, 0,
				  vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, hva2 + 4096,
					       0x1122334455667788ull),
				  NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(qt_readq(v->qt, ram2_pa + 4096),
			  0x1122334455667788ull);
	uint64_t now = qt_clock_step(v->qt, 12345);
	struct vnpu_cmd ts = vnpu_cmd_of(VNPU_OP_TIMESTAMP);
	ts.timestamp.va = hva2 + 4104;
	ck_assert_uint_eq(vq_exec(v, 0, ts, &cpl), VNPU_STATUS_OK);
	/* The device clock is QEMU's virtual clock. */
	ck_assert_uint_eq(qt_readq(v->qt, ram2_pa + 4104), now);
	ck_assert_uint_eq(cpl.timestamp, now);
	vq_stop(v);
}
END_TEST

START_TEST(t_ring_wrap)
{
	struct vq *v = vq_start(_i, NULL, NULL);
	uint64_t seq = 0;

	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 2, false); /* 4 entries */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 3; i++)
			seq = vq_push(v, 0, vnpu_cmd_of(VNPU_OP_NOP));
		vq_ring(v, 0);
		ck_assert(vq_wait(v, 0, seq, WAIT_MS));
		ck_assert_uint_eq(vq_cpl(v, 0, seq).seqno, seq);
	}
	ck_assert_uint_eq(seq, 15);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_DONE_SEQ_LO)), 15);
	vq_stop(v);
}
END_TEST

/* ---- kernels ----------------------------------------------------------------- */

static struct vnpu_tensor tensor2(uint32_t buf, int64_t rows, int64_t cols)
{
	const int64_t sizes[2] = {rows, cols};

	return vnpu_tensor_dense(buf, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, sizes);
}

START_TEST(t_kernels)
{
	struct vq *v = up(_i, "cores=3");
	enum { M = 17, N = 15, K = 9 };
	float a[M * K], b[K * N], c[M * N], ref[M * N];
	uint64_t a_pa, b_off, c_off;
	uint64_t a_va = vq_alloc_map(v, 0, false, sizeof(a), &a_pa);
	uint64_t b_va = vq_alloc_map(v, 0, true, sizeof(b), &b_off);
	uint64_t c_va = vq_alloc_map(v, 0, true, sizeof(c), &c_off);
	struct vnpu_kargs_buffer bufs[3] = {
		{a_va, sizeof(a), VNPU_ACCESS_READ, 0},
		{b_va, sizeof(b), VNPU_ACCESS_READ, 0},
		{c_va, sizeof(c), VNPU_ACCESS_READ | VNPU_ACCESS_WRITE, 0},
	};
	struct vnpu_kp_gemm g;
	struct vnpu_kp_fill f;
	struct vnpu_cpl cpl;

	/* FILL kernel on VRAM. */
	memset(&f, 0, sizeof(f));
	f.out = tensor2(0, M, N);
	f.value = 2.5;
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_FILL, 4, &bufs[2], 1, &f,
				    sizeof(f), &cpl),
			  VNPU_STATUS_OK);
	qt_memread(v->qt, VQ_BAR4_ADDR + c_off, c, sizeof(c));
	for (int i = 0; i < M * N; i++)
		ck_assert_float_eq(c[i], 2.5f);

	/* GEMM: A in guest RAM (staged), B and C in VRAM. */
	for (int i = 0; i < M * K; i++)
		a[i] = (float)((i * 37 % 23) - 11) / 8.0f;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)((i * 29 % 19) - 9) / 4.0f;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double s = 0;

			for (int k = 0; k < K; k++)
				s += (double)a[m * K + k] * b[k * N + n];
			ref[m * N + n] = (float)s;
		}
	qt_memwrite(v->qt, a_pa, a, sizeof(a));
	qt_memwrite(v->qt, VQ_BAR4_ADDR + b_off, b, sizeof(b));
	memset(&g, 0, sizeof(g));
	g.alpha = 1.0f;
	g.beta = 0.0f;
	g.activation = VNPU_ACT_NONE;
	g.a = tensor2(0, M, K);
	g.b = tensor2(1, K, N);
	g.out = tensor2(2, M, N);
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_GEMM, 3, bufs, 3, &g,
				    sizeof(g), &cpl),
			  VNPU_STATUS_OK);
	qt_memread(v->qt, VQ_BAR4_ADDR + c_off, c, sizeof(c));
	for (int i = 0; i < M * N; i++)
		ck_assert_float_eq_tol(c[i], ref[i], 1e-4f * (1 + fabsf(ref[i])));
	/* A launch that fails validation writes nothing. */
	g.out.sizes[0] = M + 1;
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_GEMM, 3, bufs, 3, &g,
				    sizeof(g), &cpl),
			  VNPU_STATUS_INVALID_ARGS);
	qt_memread(v->qt, VQ_BAR4_ADDR + c_off, c, sizeof(c));
	for (int i = 0; i < M * N; i++)
		ck_assert_float_eq_tol(c[i], ref[i], 1e-4f * (1 + fabsf(ref[i])));
	vq_stop(v);
}
END_TEST

/* ---- interrupts ---------------------------------------------------------------- */

static bool wait_msi(struct vq *v, unsigned vector, uint32_t expect)
{
	for (uint64_t end = vq_now_ms() + WAIT_MS; vq_now_ms() < end;)
		if (vq_msi_word(v, vector) == expect)
			return true;
	return false;
}

START_TEST(t_msix)
{
	struct vq *v = vq_start(_i, "queues=2,test-mode=on", NULL);
	struct vnpu_cmd nop = vnpu_cmd_of(VNPU_OP_NOP);
	unsigned nvec = VNPU_MSIX_VECTORS(2);

	vq_msix_enable(v, nvec);
	/* Boot done: vector 0. */
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	ck_assert(wait_msi(v, 0, 0x100));
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 4, true);
	vq_queue_init(v, 1, 0, 4, true);
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);

	/* Queue 1 completion with IRQ: vector 2 only. */
	nop.hdr.flags = VNPU_CMD_F_IRQ;
	ck_assert_uint_eq(vq_exec(v, 1, nop, NULL), VNPU_STATUS_OK);
	ck_assert(wait_msi(v, 2, 0x102));
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_IRQ_STATUS) & VNPU_IRQ_QUEUE(1), 0);
	ck_assert_uint_eq(vq_msi_word(v, 1), 0);
	/* Without the IRQ flag: no interrupt. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	vq_msi_clear(v, nvec);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(vq_exec(v, 0, nop, NULL), VNPU_STATUS_OK);
	ck_assert(wait_msi(v, 1, 0x101));
	/* Masked vector: pending bit in the PBA, delivered on unmask. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	vq_msi_clear(v, nvec);
	vq_msix_mask(v, 1, true);
	ck_assert_uint_eq(vq_exec(v, 0, nop, NULL), VNPU_STATUS_OK);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !vq_msix_pending(v, 1) && vq_now_ms() < end;)
		;
	ck_assert(vq_msix_pending(v, 1));
	ck_assert_uint_eq(vq_msi_word(v, 1), 0);
	vq_msix_mask(v, 1, false);
	ck_assert(wait_msi(v, 1, 0x101));
	ck_assert(!vq_msix_pending(v, 1));
	/* An error completion interrupts even without the IRQ flag. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	vq_msi_clear(v, nvec);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(0x42), NULL),
			  VNPU_STATUS_INVALID_OPCODE);
	ck_assert(wait_msi(v, 1, 0x101));
	/* LOST_IRQ: the status bit is set, the message never arrives. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	vq_msi_clear(v, nvec);
	vq_wr(v, VNPU_REG_TEST_INJECT, VNPU_INJECT_LOST_IRQ);
	ck_assert_uint_eq(vq_exec(v, 0, nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_IRQ_STATUS) & VNPU_IRQ_QUEUE(0), 0);
	usleep(50000);
	ck_assert_uint_eq(vq_msi_word(v, 1), 0);
	/* The next one arrives again. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	ck_assert_uint_eq(vq_exec(v, 0, nop, NULL), VNPU_STATUS_OK);
	ck_assert(wait_msi(v, 1, 0x101));
	vq_stop(v);
}
END_TEST

static int raised_line(struct qt *qt)
{
	for (int n = 0; n < QT_MAX_IRQ; n++)
		if (qt->irq_level[n])
			return n;
	return -1;
}

START_TEST(t_intx)
{
	struct vq *v = vq_start(_i, NULL, NULL);
	struct vnpu_cmd nop = vnpu_cmd_of(VNPU_OP_NOP);
	int line = -1;

	qt_irq_intercept_in(v->qt, "ioapic");
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     line < 0 && vq_now_ms() < end;) {
		qt_sync_irqs(v->qt);
		line = raised_line(v->qt);
	}
	/* PCI INTx reaches the IOAPIC's PIRQ inputs (16..23 on q35). */
	ck_assert_int_ge(line, 16);
	ck_assert_int_le(line, 23);
	/* W1C of IRQ_STATUS lowers the line. */
	vq_wr(v, VNPU_REG_IRQ_STATUS, VNPU_IRQ_EVENTS);
	qt_sync_irqs(v->qt);
	ck_assert(!v->qt->irq_level[line]);
	/* A completion raises it again; masking lowers it; unmasking raises. */
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 4, true);
	nop.hdr.flags = VNPU_CMD_F_IRQ;
	ck_assert_uint_eq(vq_exec(v, 0, nop, NULL), VNPU_STATUS_OK);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !v->qt->irq_level[line] && vq_now_ms() < end;)
		qt_sync_irqs(v->qt);
	ck_assert(v->qt->irq_level[line]);
	vq_wr(v, VNPU_REG_IRQ_MASK, VNPU_IRQ_QUEUE(0));
	qt_sync_irqs(v->qt);
	ck_assert(!v->qt->irq_level[line]);
	vq_wr(v, VNPU_REG_IRQ_MASK, 0);
	qt_sync_irqs(v->qt);
	ck_assert(v->qt->irq_level[line]);
	/* The INTx disable bit of the command register. */
	vq_cfg_write(v, 0x04, 0x6 | 0x400, 2);
	qt_sync_irqs(v->qt);
	ck_assert(!v->qt->irq_level[line]);
	vq_cfg_write(v, 0x04, 0x6, 2);
	qt_sync_irqs(v->qt);
	ck_assert(v->qt->irq_level[line]);
	vq_wr(v, VNPU_REG_IRQ_STATUS, 0xffffffffu);
	qt_sync_irqs(v->qt);
	ck_assert(!v->qt->irq_level[line]);
	vq_stop(v);
}
END_TEST

/* ---- MMU ----------------------------------------------------------------------- */

static void check_fault(struct vq *v, uint32_t reason, uint64_t va,
			bool write)
{
	uint32_t fs = vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS));

	ck_assert_uint_ne(fs & VNPU_FAULT_PENDING, 0);
	ck_assert_uint_eq(VNPU_FAULT_REASON(fs), reason);
	ck_assert_uint_eq(!!(fs & VNPU_FAULT_WRITE), write);
	ck_assert_uint_eq(VNPU_FAULT_QUEUE(fs), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_VA_LO)),
			  (uint32_t)va);
	ck_assert_uint_eq(vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_VA_HI)),
			  (uint32_t)(va >> 32));
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_FAULTED_CTX_LO) & 1, 1);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_EVENT_STATUS) &
				  VNPU_EVENT_MMU_FAULT, 0);
	/* Later commands of the context do not run until the fault is
	 * cleared. */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_CONTEXT_FAULTED);
	vq_wr(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), VNPU_FAULT_PENDING);
	vq_wr(v, VNPU_REG_EVENT_STATUS, 0xffffffffu);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_FAULTED_CTX_LO), 0);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_OK);
}

START_TEST(t_mmu_faults)
{
	struct vq *v = up(_i, "test-mode=on");
	struct vnpu_cpl cpl;
	uint64_t off, pa;
	uint64_t vva = vq_alloc_map(v, 0, true, 4096, &off);
	uint64_t ro_va = 0x3000000000ull, bad_va = 0x3100000000ull;
	uint64_t tbl_va = 0x4000000000ull, unmapped = 0x5000000000ull;

	(void)pa;
	/* 1 not mapped (a write). */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(unmapped + 8, 64, 1, 1),
				  &cpl),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(cpl.info, unmapped + 8);
	check_fault(v, VNPU_FAULT_NOT_MAPPED, unmapped + 8, true);
	ck_assert_uint_eq(vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_COUNT)), 1);
	/* 2 permission: a read-only page written. */
	vq_map(v, 0, ro_va, true, off, 4096, VNPU_PTE_READ);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(vva, ro_va, 16), &cpl),
			  VNPU_STATUS_MMU_FAULT);
	check_fault(v, VNPU_FAULT_PERMISSION, ro_va, true);
	/* 3 bad PTE: a VRAM page beyond VRAM. */
	vq_set_pte(v, 0, bad_va, 2,
		   VNPU_PTE_VALID | VNPU_PTE_READ | VNPU_PTE_VRAM |
			   (v->vram_size + 0x10000));
	vq_wr(v, VNPU_CTX_REG(0, VNPU_CTX_CTRL),
	      VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(bad_va, vva, 16), &cpl),
			  VNPU_STATUS_MMU_FAULT);
	check_fault(v, VNPU_FAULT_BAD_PTE, bad_va, false);
	/* 4 a table the bus refuses: the device's own BAR0. */
	vq_set_pte(v, 0, tbl_va, 0, VNPU_PTE_VALID | VQ_BAR0_ADDR);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(tbl_va, vva, 16), &cpl),
			  VNPU_STATUS_MMU_FAULT);
	check_fault(v, VNPU_FAULT_TABLE_DMA, tbl_va, false);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ID), VNPU_ID_VALUE);
	/* 5 VA beyond 2^39. */
	ck_assert_uint_eq(vq_exec(v, 0,
				  vnpu_copy_cmd(VNPU_VA_LIMIT - 8, vva, 16), &cpl),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(VNPU_FAULT_REASON(vq_rd(v, VNPU_CTX_REG(0,
					VNPU_CTX_FAULT_STATUS))),
			  VNPU_FAULT_VA_RANGE);
	check_fault(v, VNPU_FAULT_VA_RANGE,
		    vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_VA_LO)) |
			    (uint64_t)vq_rd(v, VNPU_CTX_REG(0,
					    VNPU_CTX_FAULT_VA_HI)) << 32,
		    false);
	/* 6 injected on a mapped VA. */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_inject_cmd(VNPU_TEST_MMU_FAULT,
						      vva, 1), &cpl),
			  VNPU_STATUS_MMU_FAULT);
	check_fault(v, VNPU_FAULT_INJECTED, vva, true);
	ck_assert_uint_eq(vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_COUNT)), 6);
	vq_stop(v);
}
END_TEST

/* ---- every status, fatal and error code ------------------------------------------ */

START_TEST(t_status_codes)
{
	struct vq *v = up(_i, NULL);
	struct vnpu_cmd c;
	struct vnpu_cpl cpl;
	uint64_t off, pa;
	uint64_t vva = vq_alloc_map(v, 0, true, 8192, &off);
	uint64_t hva = vq_alloc_map(v, 0, false, 8192, &pa);
	uint64_t own_bar_va = 0x2000000000ull;
	struct vnpu_kargs_buffer buf = {vva, 8192,
					VNPU_ACCESS_READ | VNPU_ACCESS_WRITE, 0};
	struct vnpu_kp_fill f;
	struct vnpu_kp_unary u;

	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(0x42), &cpl),
			  VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(cpl.opcode, 0x42);
	c = vnpu_cmd_of(VNPU_OP_NOP);
	c.hdr.flags = 0x2;
	ck_assert_uint_eq(vq_exec(v, 0, c, NULL), VNPU_STATUS_INVALID_FIELD);
	c = vnpu_cmd_of(VNPU_OP_NOP);
	c.hdr.reserved1 = 1;
	ck_assert_uint_eq(vq_exec(v, 0, c, NULL), VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(vva, 64, 0, 3), NULL),
			  VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(vq_exec(v, 0,
				  vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, hva + 4, 1),
				  NULL),
			  VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(vva + 1, 64, 0, 4), NULL),
			  VNPU_STATUS_MISALIGNED);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(hva, vva, 0), NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(vq_exec(v, 0,
				  vnpu_copy_cmd(hva, vva, VNPU_COPY_MAX_BYTES + 1),
				  NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(UINT64_MAX - 8, vva, 64),
				  NULL),
			  VNPU_STATUS_OUT_OF_RANGE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(0x6000000000ull, 8, 0, 1),
				  NULL),
			  VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_CONTEXT_FAULTED);
	vq_wr(v, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), VNPU_FAULT_PENDING);

	memset(&f, 0, sizeof(f));
	f.out = tensor2(0, 16, 16);
	ck_assert_uint_eq(vq_launch(v, 0, 99, 1, &buf, 1, &f, sizeof(f), NULL),
			  VNPU_STATUS_UNKNOWN_KERNEL);
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_FILL, 1, &buf, 1, &f,
				    sizeof(f) - 8, NULL),
			  VNPU_STATUS_INVALID_ARGS);
	memset(&u, 0, sizeof(u));
	u.op = VNPU_UNARY_EXP;
	u.src = tensor2(0, 4, 4);
	u.out = tensor2(0, 4, 4);
	u.src.dtype = u.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_UNARY, 1, &buf, 1, &u,
				    sizeof(u), NULL),
			  VNPU_STATUS_UNSUPPORTED);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0),
				  NULL),
			  VNPU_STATUS_NOT_PERMITTED);

	/* DMA aimed at the device's own BAR0 through a mapped page: refused
	 * by the bus (memory-only DMA), the device reports DMA_ERROR. */
	vq_map(v, 0, own_bar_va, false, VQ_BAR0_ADDR, 4096,
	       VNPU_PTE_READ | VNPU_PTE_WRITE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(own_bar_va, vva, 64), &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(cpl.info, own_bar_va);
	ck_assert_uint_eq(vq_exec(v, 0,
				  vnpu_copy_cmd(vva, own_bar_va + VNPU_REG_SCRATCH,
					      4),
				  &cpl),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_SCRATCH), 0);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL,
						     own_bar_va + 0x20, 3),
				  NULL),
			  VNPU_STATUS_DMA_ERROR);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_BOOT_STATUS), VNPU_BOOT_READY);
	/* Unbacked bus address above guest RAM. */
	vq_map(v, 0, own_bar_va + 0x100000, false, 0x7000000000ull, 4096,
	       VNPU_PTE_READ | VNPU_PTE_WRITE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_copy_cmd(own_bar_va + 0x100000, vva,
						    64),
				  NULL),
			  VNPU_STATUS_DMA_ERROR);

	/* TOO_LARGE: a 256 MiB + 4 KiB host buffer (every page the same
	 * guest page: 129 second-level entries share one leaf table). */
	uint64_t big_va = 0x800000000ull, leaf = vq_ram_alloc(v, 4096);
	uint64_t ptes[512];
	for (int i = 0; i < 512; i++)
		ptes[i] = pa | VNPU_PTE_VALID | VNPU_PTE_READ;
	qt_memwrite(v->qt, leaf, ptes, sizeof(ptes));
	for (uint64_t i = 0; i < 129; i++)
		vq_set_pte(v, 0, big_va + (i << 21), 1, leaf | VNPU_PTE_VALID);
	vq_wr(v, VNPU_CTX_REG(0, VNPU_CTX_CTRL),
	      VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE);
	struct vnpu_kargs_buffer bufs2[2] = {
		{big_va, (256ull << 20) + 4096, VNPU_ACCESS_READ, 0},
		{vva, 8192, VNPU_ACCESS_READ | VNPU_ACCESS_WRITE, 0},
	};
	struct vnpu_kp_cast cast;
	memset(&cast, 0, sizeof(cast));
	cast.src = tensor2(0, 4, 4);
	cast.out = tensor2(1, 4, 4);
	ck_assert_uint_eq(vq_launch(v, 0, VNPU_KERNEL_CAST, 1, bufs2, 2, &cast,
				    sizeof(cast), NULL),
			  VNPU_STATUS_TOO_LARGE);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_OK);
	/* Q_STATUS keeps the last failure. */
	ck_assert_uint_eq(VNPU_Q_STATUS_ERROR(vq_rd(v, VNPU_QUEUE_REG(0,
						   VNPU_Q_STATUS))),
			  VNPU_STATUS_TOO_LARGE);
	vq_stop(v);
}
END_TEST

static void wait_fatal(struct vq *v, uint32_t code)
{
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_FATAL) &&
	     vq_now_ms() < end;)
		;
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_FATAL, 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_FATAL_CODE), code);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_EVENT_STATUS) & VNPU_EVENT_FATAL,
			  0);
}

START_TEST(t_fatal_and_errors)
{
	struct vq *v = vq_start(_i, "queues=2,test-mode=on", NULL);

	/* 4: queue enabled before boot. */
	vq_ctx_init(v, 0);
	ck_assert_uint_ne(vq_queue_init(v, 0, 0, 4, false) &
				  VNPU_Q_STATUS_CONFIG_ERROR,
			  0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE), VNPU_ERR_NOT_READY);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_EVENT_STATUS) &
				  VNPU_EVENT_QUEUE_ERROR,
			  0);
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	/* 3: bad configuration (ring log2 out of range). */
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_RING_LOG2), 13);
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE), VNPU_ERR_QUEUE_CONFIG);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_QUEUE), 1);
	/* 2: doorbell of a disabled queue. */
	vq_wr(v, VNPU_DOORBELL(1), 1);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE),
			  VNPU_ERR_DOORBELL_DISABLED);
	/* 1: doorbell value out of range; the queue keeps working. */
	ck_assert_uint_eq(vq_queue_init(v, 0, 0, 4, false) & 7,
			  VNPU_Q_STATUS_ENABLED);
	vq_wr(v, VNPU_REG_EVENT_STATUS, 0xffffffffu);
	vq_wr(v, VNPU_DOORBELL(0), 16);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE), VNPU_ERR_DOORBELL_RANGE);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_QUEUE), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_VALUE), 16);
	ck_assert_uint_ne(vq_rd(v, VNPU_REG_EVENT_STATUS) &
				  VNPU_EVENT_DOORBELL_ERROR,
			  0);
	vq_wr(v, VNPU_DOORBELL(0), 0xffffffffu);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_VALUE), 0xffffffffu);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_TAIL)), 0);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_OK);
	/* 5: unknown TEST_INJECT kind. */
	vq_wr(v, VNPU_REG_TEST_INJECT, 77);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);

	/* Fatal 2: the ring is the device's own BAR0: the fetch fails. */
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_RING_LOG2), 2);
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_RING_BASE_LO), (uint32_t)VQ_BAR0_ADDR);
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_CPL_BASE_LO),
	      (uint32_t)vq_ram_alloc(v, 4096));
	vq_wr(v, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	vq_wr(v, VNPU_DOORBELL(1), 1);
	wait_fatal(v, VNPU_FATAL_RING_DMA);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_ID), VNPU_ID_VALUE);

	/* Fatal 3: completion ring unwritable (own BAR0). */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_FATAL, 0);
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 4, false);
	vq_wr(v, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), 0);
	vq_wr(v, VNPU_QUEUE_REG(0, VNPU_Q_CPL_BASE_LO),
	      (uint32_t)VQ_BAR0_ADDR);
	vq_wr(v, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	vq_submit(v, 0, vnpu_cmd_of(VNPU_OP_NOP));
	wait_fatal(v, VNPU_FATAL_CPL_DMA);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_SCRATCH), 0);

	/* Fatal 1: injected. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_wr(v, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	wait_fatal(v, VNPU_FATAL_INJECTED);
	vq_stop(v);
}
END_TEST

/* ---- resets ------------------------------------------------------------------------ */

/* Queues a lot of VRAM fills on queue 0 (ring of 256) and rings. */
static uint64_t queue_work(struct vq *v, uint64_t vva, int n)
{
	uint64_t seq = 0;

	for (int i = 0; i < n; i++)
		seq = vq_push(v, 0, vnpu_fill_cmd(vva, 8u << 20, (uint32_t)i, 4));
	vq_ring(v, 0);
	return seq;
}

static unsigned count_cpls(struct vq *v)
{
	uint8_t ring[256 * VNPU_CPL_SIZE];
	unsigned n = 0;

	qt_memread(v->qt, v->q[0].cpl, ring, sizeof(ring));
	for (unsigned i = 0; i < 256; i++) {
		uint64_t seq;

		memcpy(&seq, ring + i * VNPU_CPL_SIZE, 8);
		n += seq != 0;
	}
	return n;
}

enum reset_kind { RESET_CTRL, RESET_FLR, RESET_SYSTEM };

static void reset_midwork(int mode, enum reset_kind kind)
{
	struct vq *v = vq_start(mode, "vram-size=16M", NULL);
	uint64_t off, vva;
	unsigned before, after, count0;
	unsigned exp = vq_find_cap(v, PCI_CAP_ID_EXP);

	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 8, false);
	vva = vq_alloc_map(v, 0, true, 8u << 20, &off);
	vq_wr(v, VNPU_REG_SCRATCH, 0x1234);
	count0 = vq_rd(v, VNPU_REG_RESET_COUNT);
	queue_work(v, vva, 200);
	if (kind == RESET_CTRL) {
		vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	} else if (kind == RESET_FLR) {
		vq_cfg_write(v, exp + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_BCR_FLR, 2);
		/* FLR clears the BARs and the command register. */
		ck_assert_uint_eq(vq_cfg_read(v, 0x04, 2) & 0x6, 0);
		reprogram_bars(v);
	} else {
		qt_system_reset(v->qt);
		reprogram_bars(v);
	}
	before = count_cpls(v);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_RESET_COUNT), count0 + 1);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_BOOT_STATUS), VNPU_BOOT_OFF);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_SCRATCH), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_STATUS)), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_DONE_SEQ_LO)), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_CTX_REG(0, VNPU_CTX_CTRL)), 0);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT), 0);
	/* Nothing is written after the reset. */
	usleep(100000);
	qt_clock_step(v->qt, 1000000);
	after = count_cpls(v);
	ck_assert_uint_eq(before, after);
	ck_assert_uint_lt(after, 200);
	/* The device works again after a new boot. */
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	vq_ctx_init(v, 0);
	vq_map(v, 0, vva, true, off, 4096, VNPU_PTE_READ | VNPU_PTE_WRITE);
	vq_queue_init(v, 0, 0, 4, false);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_fill_cmd(vva, 4096, 0x77, 1), NULL),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(qt_readl(v->qt, VQ_BAR4_ADDR + off), 0x77777777);
	vq_stop(v);
}

START_TEST(t_reset_ctrl)
{
	reset_midwork(_i, RESET_CTRL);
}
END_TEST

START_TEST(t_reset_flr)
{
	reset_midwork(_i, RESET_FLR);
}
END_TEST

START_TEST(t_reset_system)
{
	reset_midwork(_i, RESET_SYSTEM);
}
END_TEST

/* ---- hang, heartbeat, fences ------------------------------------------------------- */

START_TEST(t_hang_heartbeat)
{
	struct vq *v = up(_i, "test-mode=on");
	uint32_t hb0, hb1;

	/* The heartbeat follows QEMU's virtual clock: one per 1000 us. */
	hb0 = vq_rd(v, VNPU_REG_HEARTBEAT);
	qt_clock_step(v->qt, 5 * 1000000ull);
	hb1 = vq_rd(v, VNPU_REG_HEARTBEAT);
	ck_assert_uint_eq(hb1 - hb0, 5);
	/* A hang: the heartbeat stands still, nothing runs. */
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0),
				  NULL),
			  UINT32_MAX);
	hb0 = vq_rd(v, VNPU_REG_HEARTBEAT);
	qt_clock_step(v->qt, 5 * 1000000ull);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT), hb0);
	/* Reset recovers. */
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	ck_assert_uint_eq(vq_boot(v), VNPU_BOOT_READY);
	hb0 = vq_rd(v, VNPU_REG_HEARTBEAT);
	qt_clock_step(v->qt, 3 * 1000000ull);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT) - hb0, 3);
	/* Hang through the register. */
	vq_wr(v, VNPU_REG_TEST_INJECT, VNPU_INJECT_HANG);
	hb0 = vq_rd(v, VNPU_REG_HEARTBEAT);
	qt_clock_step(v->qt, 3 * 1000000ull);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT), hb0);
	vq_stop(v);
}
END_TEST

START_TEST(t_inject_needs_test_mode)
{
	struct vq *v = up(_i, NULL);
	uint32_t hb0;

	vq_wr(v, VNPU_REG_TEST_INJECT, VNPU_INJECT_HANG);
	hb0 = vq_rd(v, VNPU_REG_HEARTBEAT);
	qt_clock_step(v->qt, 2 * 1000000ull);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_HEARTBEAT) - hb0, 2);
	vq_wr(v, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	ck_assert_uint_eq(vq_rd(v, VNPU_REG_STATUS) & VNPU_STATUS_FATAL, 0);
	ck_assert_uint_eq(vq_exec(v, 0, vnpu_cmd_of(VNPU_OP_NOP), NULL),
			  VNPU_STATUS_OK);
	vq_stop(v);
}
END_TEST

START_TEST(t_fence_wait)
{
	struct vq *v = up(_i, NULL);
	uint64_t pa, hva = vq_alloc_map(v, 0, false, 4096, &pa);
	uint64_t seq;

	seq = vq_submit(v, 0, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, hva, 5));
	vq_submit(v, 0, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, hva + 8, 9));
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_STATUS)) &
	       VNPU_Q_STATUS_WAITING) &&
	     vq_now_ms() < end;)
		;
	ck_assert_uint_ne(vq_rd(v, VNPU_QUEUE_REG(0, VNPU_Q_STATUS)) &
				  VNPU_Q_STATUS_WAITING,
			  0);
	qt_writeq(v->qt, pa, 4);
	qt_clock_step(v->qt, 1000000);
	usleep(20000);
	ck_assert(!vq_wait(v, 0, seq, 50));
	/* Satisfied: the queue resumes (deterministic mode re-reads the
	 * fence on a virtual-clock timer). */
	qt_writeq(v->qt, pa, 5);
	for (uint64_t end = vq_now_ms() + WAIT_MS;
	     !vq_wait(v, 0, seq + 1, 1) && vq_now_ms() < end;)
		qt_clock_step(v->qt, 200000);
	ck_assert(vq_wait(v, 0, seq + 1, 1));
	ck_assert_uint_eq(qt_readq(v->qt, pa + 8), 9);
	vq_stop(v);
}
END_TEST

/* ---- properties -------------------------------------------------------------------- */

static int qemu_rejects(const char *dev)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "%s -machine q35 -accel qtest -nodefaults -display none "
		 "-device %s -S -qtest null </dev/null >/dev/null 2>&1",
		 qt_qemu_binary(), dev);
	return system(cmd) != 0;
}

START_TEST(t_bad_properties)
{
	ck_assert(qemu_rejects("vnpu,vram-size=3M"));
	ck_assert(qemu_rejects("vnpu,vram-size=512K"));
	ck_assert(qemu_rejects("vnpu,queues=0"));
	ck_assert(qemu_rejects("vnpu,queues=17"));
	ck_assert(qemu_rejects("vnpu,cores=0"));
	ck_assert(qemu_rejects("vnpu,contexts=65"));
	ck_assert(qemu_rejects("vnpu,exec-mode=fast"));
}
END_TEST

START_TEST(t_unmigratable)
{
	struct vq *v = vq_start(_i, NULL, NULL);
	const char *r = qt_qmp(v->qt, "{\"execute\": \"migrate\", \"arguments\":"
				      " {\"uri\": \"exec:cat >/dev/null\"}}");

	/* Refused: the device is not migratable. */
	ck_assert_ptr_null(r);
	vq_stop(v);
}
END_TEST

/* ---- fuzz reproducers ---------------------------------------------------------------- */

/* Replays every *.qtest file of $VNPU_FUZZ_REPRO: a "# args:" line gives
 * the QEMU options, other non-comment lines are qtest commands. QEMU must
 * survive every one and still answer. */
START_TEST(t_fuzz_reproducers)
{
	const char *dir = getenv("VNPU_FUZZ_REPRO");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int files = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char path[1024], line[65536], args[1024] = "";
		size_t n = strlen(e->d_name);
		FILE *f;
		struct qt *qt;

		if (n < 6 || strcmp(e->d_name + n - 6, ".qtest"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "# args:", 7)) {
				snprintf(args, sizeof(args), "%.1000s", line + 7);
				args[strcspn(args, "\n")] = 0;
			}
		rewind(f);
		qt = qt_start(args);
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			if (line[0] == '#' || !line[0])
				continue;
			qt_cmd(qt, "%s", line);
		}
		fclose(f);
		usleep(100000);
		ck_assert_msg(qt_alive(qt), "%s killed QEMU", e->d_name);
		qt_cmd(qt, "clock_step 1000000");
		ck_assert_msg(qt_alive(qt), "%s killed QEMU", e->d_name);
		qt_quit(qt);
		files++;
	}
	closedir(d);
	ck_assert_int_gt(files, 0);
}
END_TEST

static int mode_lo, mode_hi = VQ_MODES;

static Suite *qemu_suite(void)
{
	Suite *s = suite_create("qemu-device");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, t_identity, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_test_mode_caps, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_boot, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_nop_fill_copy, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_ring_wrap, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_kernels, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_msix, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_intx, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_mmu_faults, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_status_codes, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_fatal_and_errors, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_ctrl, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_flr, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_reset_system, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_hang_heartbeat, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_inject_needs_test_mode, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_fence_wait, mode_lo, mode_hi);
	tcase_add_loop_test(tc, t_unmigratable, mode_lo, mode_hi);
	tcase_add_test(tc, t_bad_properties);
	tcase_add_test(tc, t_fuzz_reproducers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	const char *mode = getenv("VNPU_EXEC_MODE");

	if (!qt_qemu_binary()) {
		printf("SKIP: no QEMU binary (set VNPU_QEMU or -Dqemu=PATH)\n");
		return 77;
	}
	/* One mode per run when asked (the meson tests), else both. */
	if (mode && !strcmp(mode, vq_mode_name(0)))
		mode_hi = 1;
	else if (mode && !strcmp(mode, vq_mode_name(1)))
		mode_lo = 1;
	sr = srunner_create(qemu_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
