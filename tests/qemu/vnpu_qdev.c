// SPDX-License-Identifier: MIT
/* The vnpu device over qtest; see vnpu_qdev.h. */
#include "vnpu_qdev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCI_COMMAND		0x04
#define PCI_COMMAND_MEMORY	0x2
#define PCI_COMMAND_MASTER	0x4
#define PCI_CAPABILITY_LIST	0x34
#define PCI_CAP_ID_MSIX		0x11
#define MSIX_CTRL_ENABLE	0x8000
#define MSIX_CTRL_MASKALL	0x4000
#define VQ_ARGS_VA		0x7000000000ull
#define VQ_VA_START		0x100000000ull
#define VQ_TIMEOUT_MS		20000

uint64_t vq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *vq_mode_name(int mode)
{
	return mode ? "deterministic" : "threads";
}

static uint32_t cfg_addr(unsigned reg)
{
	return 0x80000000u | (VQ_DEVFN << 8) | (reg & 0xfc);
}

uint32_t vq_cfg_read(struct vq *v, unsigned reg, unsigned size)
{
	uint32_t val;

	qt_outl(v->qt, 0xcf8, cfg_addr(reg));
	val = qt_inl(v->qt, 0xcfc);
	val >>= 8 * (reg & 3);
	return size == 4 ? val : val & ((1u << (8 * size)) - 1);
}

void vq_cfg_write(struct vq *v, unsigned reg, uint32_t val, unsigned size)
{
	uint16_t port = (uint16_t)(0xcfc + (reg & 3));

	qt_outl(v->qt, 0xcf8, cfg_addr(reg));
	if (size == 4)
		qt_outl(v->qt, port, val);
	else if (size == 2)
		qt_outw(v->qt, port, (uint16_t)val);
	else
		qt_outb(v->qt, port, (uint8_t)val);
}

unsigned vq_find_cap(struct vq *v, uint8_t id)
{
	unsigned pos = vq_cfg_read(v, PCI_CAPABILITY_LIST, 1) & 0xfc;

	for (int guard = 0; pos && guard < 48; guard++) {
		if (vq_cfg_read(v, pos, 1) == id)
			return pos;
		pos = vq_cfg_read(v, pos + 1, 1) & 0xfc;
	}
	return 0;
}

uint32_t vq_rd(struct vq *v, uint32_t reg)
{
	return qt_readl(v->qt, VQ_BAR0_ADDR + reg);
}

void vq_wr(struct vq *v, uint32_t reg, uint32_t val)
{
	qt_writel(v->qt, VQ_BAR0_ADDR + reg, val);
}

struct vq *vq_start(int mode, const char *dev_opts, const char *extra)
{
	struct vq *v = calloc(1, sizeof(*v));
	char args[1024];
	const char *vs;

	if (!v)
		abort();
	v->deterministic = mode == 1;
	v->vram_size = 16ull << 20;
	vs = dev_opts ? strstr(dev_opts, "vram-size=") : NULL;
	if (vs) {
		char *end;

		v->vram_size = strtoull(vs + 10, &end, 0);
		if (*end == 'M')
			v->vram_size <<= 20;
		else if (*end == 'G')
			v->vram_size <<= 30;
	}
	v->ram_size = 512ull << 20;
	snprintf(args, sizeof(args),
		 "-m 512M -device vnpu,addr=04.0,exec-mode=%s%s%s%s %s",
		 vq_mode_name(mode), vs ? "" : ",vram-size=16M",
		 dev_opts && *dev_opts ? "," : "", dev_opts ? dev_opts : "",
		 extra ? extra : "");
	v->qt = qt_start(args);
	v->ram_next = VQ_RAM_START;
	v->vram_next = 0;

	/* BARs: 0 (32-bit MMIO), 2 (MSI-X), 4 (64-bit prefetchable). */
	vq_cfg_write(v, 0x10, (uint32_t)VQ_BAR0_ADDR, 4);
	vq_cfg_write(v, 0x18, (uint32_t)VQ_BAR2_ADDR, 4);
	vq_cfg_write(v, 0x20, (uint32_t)VQ_BAR4_ADDR, 4);
	vq_cfg_write(v, 0x24, (uint32_t)(VQ_BAR4_ADDR >> 32), 4);
	vq_cfg_write(v, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER,
		     2);
	v->msix_cap = vq_find_cap(v, PCI_CAP_ID_MSIX);
	return v;
}

void vq_stop(struct vq *v)
{
	if (!v)
		return;
	qt_quit(v->qt);
	free(v);
}

uint64_t vq_ram_alloc(struct vq *v, uint64_t size)
{
	uint64_t a = v->ram_next;

	size = (size + VNPU_PAGE_SIZE - 1) & ~(VNPU_PAGE_SIZE - 1);
	if (!size || a + size > v->ram_size)
		abort();
	v->ram_next += size;
	return a;
}

uint64_t vq_vram_alloc(struct vq *v, uint64_t size)
{
	uint64_t a = v->vram_next;

	size = (size + VNPU_PAGE_SIZE - 1) & ~(VNPU_PAGE_SIZE - 1);
	if (!size || a + size > v->vram_size)
		abort();
	v->vram_next += size;
	qt_memset(v->qt, VQ_BAR4_ADDR + a, 0, size);
	return a;
}

void *vq_fw_image(uint32_t *size)
{
	const char *path = getenv("VNPU_FW");
	FILE *f = path ? fopen(path, "rb") : NULL;
	void *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = n > 0 ? malloc((size_t)n) : NULL;
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*size = (uint32_t)n;
	return buf;
}

uint32_t vq_boot_image(struct vq *v, const void *image, uint32_t size,
		       uint32_t fw_size)
{
	uint64_t addr = vq_ram_alloc(v, size ? size : 1);
	uint64_t deadline = vq_now_ms() + VQ_TIMEOUT_MS;
	uint32_t st;

	qt_memwrite(v->qt, addr, image, size);
	vq_wr(v, VNPU_REG_FW_ADDR_LO, (uint32_t)addr);
	vq_wr(v, VNPU_REG_FW_ADDR_HI, (uint32_t)(addr >> 32));
	vq_wr(v, VNPU_REG_FW_SIZE, fw_size);
	vq_wr(v, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	do {
		st = vq_rd(v, VNPU_REG_BOOT_STATUS);
	} while (st == VNPU_BOOT_OFF && vq_now_ms() < deadline);
	return st;
}

uint32_t vq_boot(struct vq *v)
{
	uint32_t size, st;
	void *img = vq_fw_image(&size);

	if (!img)
		return 0xdead;
	st = vq_boot_image(v, img, size, size);
	free(img);
	return st;
}

void vq_ctx_init(struct vq *v, unsigned ctx)
{
	v->root[ctx] = vq_ram_alloc(v, VNPU_PAGE_SIZE);
	qt_memset(v->qt, v->root[ctx], 0, VNPU_PAGE_SIZE);
	v->va_next[ctx] = VQ_VA_START;
	vq_wr(v, VNPU_CTX_REG(ctx, VNPU_CTX_PT_BASE_LO), (uint32_t)v->root[ctx]);
	vq_wr(v, VNPU_CTX_REG(ctx, VNPU_CTX_PT_BASE_HI),
	      (uint32_t)(v->root[ctx] >> 32));
	vq_wr(v, VNPU_CTX_REG(ctx, VNPU_CTX_CTRL), VNPU_CTX_CTRL_ENABLE);
}

/* Guest-physical address of va's entry at `level`, creating tables. */
static uint64_t pte_addr(struct vq *v, unsigned ctx, uint64_t va,
			 unsigned level)
{
	uint64_t table = v->root[ctx];

	for (unsigned l = 0; l < level; l++) {
		uint64_t ea = table + 8 * VNPU_PT_INDEX(va, l);
		uint64_t e = qt_readq(v->qt, ea);

		if (!(e & VNPU_PTE_VALID)) {
			uint64_t t = vq_ram_alloc(v, VNPU_PAGE_SIZE);

			qt_memset(v->qt, t, 0, VNPU_PAGE_SIZE);
			e = t | VNPU_PTE_VALID;
			qt_writeq(v->qt, ea, e);
		}
		table = e & VNPU_PTE_ADDR_MASK;
	}
	return table + 8 * VNPU_PT_INDEX(va, level);
}

void vq_set_pte(struct vq *v, unsigned ctx, uint64_t va, unsigned level,
		uint64_t pte)
{
	qt_writeq(v->qt, pte_addr(v, ctx, va, level), pte);
}

void vq_map(struct vq *v, unsigned ctx, uint64_t va, bool vram,
	    uint64_t addr, uint64_t size, uint64_t prot)
{
	uint64_t flags = VNPU_PTE_VALID | prot | (vram ? VNPU_PTE_VRAM : 0);

	for (uint64_t off = 0; off < size; off += VNPU_PAGE_SIZE) {
		/* One leaf table covers 512 pages: write it in one go. */
		uint64_t first = va + off;
		unsigned idx = VNPU_PT_INDEX(first, 2);
		unsigned n = 512 - idx;
		uint64_t pages = (size - off) / VNPU_PAGE_SIZE;
		uint64_t ptes[512];

		if (n > pages)
			n = (unsigned)pages;
		if (!n)
			break;
		for (unsigned i = 0; i < n; i++)
			ptes[i] = ((addr + off + i * VNPU_PAGE_SIZE) &
				   VNPU_PTE_ADDR_MASK) | flags;
		qt_memwrite(v->qt, pte_addr(v, ctx, first, 2), ptes, 8ull * n);
		off += (uint64_t)(n - 1) * VNPU_PAGE_SIZE;
	}
	vq_wr(v, VNPU_CTX_REG(ctx, VNPU_CTX_CTRL),
	      VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE);
}

uint64_t vq_alloc_map(struct vq *v, unsigned ctx, bool vram, uint64_t size,
		      uint64_t *addr)
{
	uint64_t a = vram ? vq_vram_alloc(v, size) : vq_ram_alloc(v, size);
	uint64_t va = v->va_next[ctx];
	uint64_t pages = (size + VNPU_PAGE_SIZE - 1) / VNPU_PAGE_SIZE;

	v->va_next[ctx] += (pages + 1) * VNPU_PAGE_SIZE; /* guard page */
	vq_map(v, ctx, va, vram, a, pages * VNPU_PAGE_SIZE,
	       VNPU_PTE_READ | VNPU_PTE_WRITE);
	if (addr)
		*addr = a;
	return va;
}

uint32_t vq_queue_init(struct vq *v, unsigned q, unsigned ctx, unsigned log2,
		       bool irq)
{
	struct vq_queue *qu = &v->q[q];
	uint32_t entries = 1u << log2;

	qu->ring = vq_ram_alloc(v, entries * VNPU_CMD_SIZE);
	qu->cpl = vq_ram_alloc(v, entries * VNPU_CPL_SIZE);
	qt_memset(v->qt, qu->ring, 0, entries * VNPU_CMD_SIZE);
	qt_memset(v->qt, qu->cpl, 0, entries * VNPU_CPL_SIZE);
	qu->entries = entries;
	qu->tail = 0;
	qu->next_seq = 1;
	qu->ctx = ctx;
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_LO), (uint32_t)qu->ring);
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_HI),
	      (uint32_t)(qu->ring >> 32));
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_LO), (uint32_t)qu->cpl);
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_HI),
	      (uint32_t)(qu->cpl >> 32));
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_RING_LOG2), log2);
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_CTX), ctx);
	vq_wr(v, VNPU_QUEUE_REG(q, VNPU_Q_CTRL),
	      VNPU_Q_CTRL_ENABLE | (irq ? VNPU_Q_CTRL_IRQ_ENABLE : 0));
	return vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_STATUS));
}

uint64_t vq_push(struct vq *v, unsigned q, struct vnpu_cmd cmd)
{
	struct vq_queue *qu = &v->q[q];

	cmd.hdr.seqno = qu->next_seq++;
	qt_memwrite(v->qt, qu->ring + (uint64_t)qu->tail * VNPU_CMD_SIZE, &cmd,
		    sizeof(cmd));
	qu->tail = (qu->tail + 1) & (qu->entries - 1);
	return cmd.hdr.seqno;
}

void vq_ring(struct vq *v, unsigned q)
{
	vq_wr(v, VNPU_DOORBELL(q), v->q[q].tail);
}

uint64_t vq_submit(struct vq *v, unsigned q, struct vnpu_cmd cmd)
{
	uint64_t seq = vq_push(v, q, cmd);

	vq_ring(v, q);
	return seq;
}

bool vq_wait(struct vq *v, unsigned q, uint64_t seq, unsigned timeout_ms)
{
	uint64_t deadline = vq_now_ms() + timeout_ms;

	do {
		uint64_t lo = vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_LO));
		uint64_t hi = vq_rd(v, VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_HI));

		if ((hi << 32 | lo) >= seq)
			return true;
	} while (vq_now_ms() < deadline);
	return false;
}

struct vnpu_cpl vq_cpl(struct vq *v, unsigned q, uint64_t seq)
{
	struct vq_queue *qu = &v->q[q];
	struct vnpu_cpl cpl;

	qt_memread(v->qt,
		   qu->cpl + ((seq - 1) & (qu->entries - 1)) * VNPU_CPL_SIZE,
		   &cpl, sizeof(cpl));
	return cpl;
}

uint32_t vq_exec(struct vq *v, unsigned q, struct vnpu_cmd cmd,
		 struct vnpu_cpl *cpl)
{
	uint64_t seq = vq_submit(v, q, cmd);
	struct vnpu_cpl c;

	if (!vq_wait(v, q, seq, VQ_TIMEOUT_MS))
		return UINT32_MAX;
	c = vq_cpl(v, q, seq);
	if (cpl)
		*cpl = c;
	return c.seqno == seq ? c.status : UINT32_MAX - 1;
}

uint32_t vq_launch(struct vq *v, unsigned q, uint32_t kernel_id,
		   uint32_t blocks, const struct vnpu_kargs_buffer *bufs,
		   uint32_t nbufs, const void *params, uint32_t params_size,
		   struct vnpu_cpl *cpl)
{
	struct vnpu_kargs_header hdr = {nbufs, params_size, 0};
	size_t size = sizeof(hdr) + nbufs * sizeof(*bufs) + params_size;
	uint8_t *blob = calloc(1, size);
	unsigned ctx = v->q[q].ctx;
	uint64_t pa = vq_ram_alloc(v, size);
	uint64_t va = v->va_next[ctx];
	struct vnpu_cmd cmd = vnpu_cmd_of(VNPU_OP_KERNEL_LAUNCH);

	if (!blob)
		abort();
	memcpy(blob, &hdr, sizeof(hdr));
	memcpy(blob + sizeof(hdr), bufs, nbufs * sizeof(*bufs));
	memcpy(blob + sizeof(hdr) + nbufs * sizeof(*bufs), params, params_size);
	qt_memwrite(v->qt, pa, blob, size);
	free(blob);
	v->va_next[ctx] +=
		((size + VNPU_PAGE_SIZE - 1) / VNPU_PAGE_SIZE + 1) *
		VNPU_PAGE_SIZE;
	vq_map(v, ctx, va, false, pa,
	       (size + VNPU_PAGE_SIZE - 1) & ~(VNPU_PAGE_SIZE - 1),
	       VNPU_PTE_READ);
	cmd.launch.kernel_id = kernel_id;
	cmd.launch.block_count = blocks;
	cmd.launch.args_va = va;
	cmd.launch.args_size = (uint32_t)size;
	return vq_exec(v, q, cmd, cpl);
}

void vq_msix_enable(struct vq *v, unsigned nvec)
{
	unsigned cap = v->msix_cap;
	uint32_t table = vq_cfg_read(v, cap + 4, 4);
	uint64_t base = VQ_BAR2_ADDR + (table & ~7u);

	for (unsigned i = 0; i < nvec; i++) {
		uint64_t e = base + 16ull * i;

		qt_writel(v->qt, e + 0, (uint32_t)(VQ_MSI_ADDR + 4 * i));
		qt_writel(v->qt, e + 4, 0);
		qt_writel(v->qt, e + 8, 0x100 + i);
		qt_writel(v->qt, e + 12, 0);	/* unmasked */
	}
	vq_msi_clear(v, nvec);
	vq_cfg_write(v, cap + 2, MSIX_CTRL_ENABLE, 2);
}

void vq_msix_mask(struct vq *v, unsigned vector, bool masked)
{
	uint32_t table = vq_cfg_read(v, v->msix_cap + 4, 4);

	qt_writel(v->qt, VQ_BAR2_ADDR + (table & ~7u) + 16ull * vector + 12,
		  masked ? 1 : 0);
}

bool vq_msix_pending(struct vq *v, unsigned vector)
{
	uint32_t pba = vq_cfg_read(v, v->msix_cap + 8, 4);
	uint32_t word = qt_readl(v->qt, VQ_BAR2_ADDR + (pba & ~7u) +
					    4 * (vector / 32));

	return word >> (vector % 32) & 1;
}

uint32_t vq_msi_word(struct vq *v, unsigned vector)
{
	return qt_readl(v->qt, VQ_MSI_ADDR + 4 * vector);
}

void vq_msi_clear(struct vq *v, unsigned nvec)
{
	qt_memset(v->qt, VQ_MSI_ADDR, 0, 4 * nvec);
}
