// SPDX-License-Identifier: MIT
/*
 * libFuzzer target over the simulated device's command processor. A fresh
 * booted device per input (deterministic mode, test mode on), two contexts
 * with some host and VRAM pages mapped, two queues; the input is a list of
 * operations (format in fuzz_format.h): register writes, host memory and
 * VRAM contents, page-table entries, commands, runs and clock steps. After
 * every run the device's invariants are checked; a violation aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_format.h"
#include "vnpu/hw_status.h"
#include "vnpu_simhost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reader {
	const uint8_t *p;
	size_t left;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->left < n)
		return false;
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

static void violated(const char *what)
{
	fprintf(stderr, "fuzz_cmd: invariant violated: %s\n", what);
	abort();
}

static void check_invariants(struct vnpu_simhost *h, unsigned budget,
			     unsigned retired)
{
	uint32_t irq = vnpu_simhost_rd(h, VNPU_REG_IRQ_STATUS);
	uint32_t status = vnpu_simhost_rd(h, VNPU_REG_STATUS);

	if (retired > budget)
		violated("run retired more than its budget");
	if (irq & ~0x7u)
		violated("IRQ_STATUS has bits of queues that do not exist");
	if (vnpu_simhost_rd(h, VNPU_REG_ID) != VNPU_ID_VALUE)
		violated("ID changed");
	for (unsigned q = 0; q < FUZZ_QUEUES; q++) {
		uint32_t qs =
			vnpu_simhost_rd(h, VNPU_QUEUE_REG(q, VNPU_Q_STATUS));
		uint32_t log2 =
			vnpu_simhost_rd(h, VNPU_QUEUE_REG(q, VNPU_Q_RING_LOG2));
		uint32_t head =
			vnpu_simhost_rd(h, VNPU_QUEUE_REG(q, VNPU_Q_HEAD));

		if (VNPU_Q_STATUS_ERROR(qs) >= VNPU_STATUS_COUNT)
			violated("Q_STATUS error code out of range");
		if ((qs & VNPU_Q_STATUS_ENABLED) &&
		    (log2 > VNPU_RING_LOG2_MAX || head >= (1u << log2)))
			violated("HEAD outside the ring");
		for (uint32_t s = 0; s < h->q[q].entries; s++) {
			struct vnpu_cpl c = vnpu_simhost_cpl(h, q, s + 1);

			if (c.seqno && c.status >= VNPU_STATUS_COUNT)
				violated("completion status out of range");
		}
	}
	/* A run that stopped under its budget left nothing runnable. */
	if (retired < budget && !vnpu_sim_idle(h->sim))
		violated("run returned early with work runnable");
	if ((status & VNPU_STATUS_FATAL) &&
	    vnpu_simhost_rd(h, VNPU_REG_FATAL_CODE) == VNPU_FATAL_NONE)
		violated("FATAL without a code");
}

static void setup(struct vnpu_simhost *h, uint8_t flags)
{
	/* The first allocations: FUZZ_HOST_BUS and FUZZ_VRAM_OFFSET. */
	uint64_t host = vnpu_simhost_host_alloc(h, FUZZ_HOST_WINDOW, 4096);
	uint64_t vram = vnpu_simhost_vram_alloc(h, FUZZ_VRAM_WINDOW, 4096);

	if (host != FUZZ_HOST_BUS || vram != FUZZ_VRAM_OFFSET ||
	    vnpu_simhost_boot(h) != VNPU_BOOT_READY)
		violated("set-up failed");
	for (unsigned c = 0; c < FUZZ_CONTEXTS; c++) {
		vnpu_simhost_ctx_init(h, c, c == 0 && (flags & 1));
		vnpu_simhost_map(h, c, FUZZ_HOST_VA, false, host,
				 FUZZ_HOST_WINDOW,
				 VNPU_PTE_READ | VNPU_PTE_WRITE);
		vnpu_simhost_map(h, c, FUZZ_VRAM_VA, true, vram,
				 FUZZ_VRAM_WINDOW,
				 VNPU_PTE_READ | VNPU_PTE_WRITE);
	}
	for (unsigned q = 0; q < FUZZ_QUEUES; q++)
		vnpu_simhost_queue_init(h, q, q % FUZZ_CONTEXTS,
					2 + ((flags >> (1 + q)) & 1), true);
}

static void op_reg(struct vnpu_simhost *h, struct reader *r)
{
	uint16_t off;
	uint32_t value;

	if (take(r, &off, 2) && take(r, &value, 4))
		vnpu_simhost_wr(h, off, value);
}

static void op_mem(struct vnpu_simhost *h, struct reader *r, bool vram)
{
	uint64_t window = vram ? FUZZ_VRAM_WINDOW : FUZZ_HOST_WINDOW;
	uint8_t len, buf[255];
	uint8_t *base;
	uint16_t off;

	if (!take(r, &off, 2) || !take(r, &len, 1) || !take(r, buf, len))
		return;
	base = vram ? vnpu_simhost_vram_ptr(h, FUZZ_VRAM_OFFSET)
		    : vnpu_simhost_host_ptr(h, FUZZ_HOST_BUS, window);
	off %= window;
	if (len > window - off)
		len = (uint8_t)(window - off);
	memcpy(base + off, buf, len);
}

static void op_submit(struct vnpu_simhost *h, struct reader *r)
{
	uint8_t q;
	struct vnpu_cmd cmd;

	if (!take(r, &q, 1) || !take(r, &cmd, sizeof(cmd)))
		return;
	q %= FUZZ_QUEUES;
	if (!h->q[q].entries)
		return;
	vnpu_simhost_submit(h, q, cmd);
}

static void op_pte(struct vnpu_simhost *h, struct reader *r)
{
	uint8_t ctx, level;
	uint32_t page;
	uint64_t value;

	if (!take(r, &ctx, 1) || !take(r, &page, 4) || !take(r, &level, 1) ||
	    !take(r, &value, 8))
		return;
	vnpu_simhost_set_pte(h, ctx % FUZZ_CONTEXTS,
			     ((uint64_t)page << 12) & (VNPU_VA_LIMIT - 1),
			     level % 3, value);
}

static void op_map(struct vnpu_simhost *h, struct reader *r)
{
	uint8_t ctx, flags;
	uint16_t va_page, target;
	uint64_t addr;

	if (!take(r, &ctx, 1) || !take(r, &va_page, 2) ||
	    !take(r, &target, 2) || !take(r, &flags, 1))
		return;
	addr = (uint64_t)(target % 256) << 12;
	if (!(flags & 1))
		addr += FUZZ_HOST_BUS - 0x2000; /* two refused pages first */
	vnpu_simhost_map(h, ctx % FUZZ_CONTEXTS, (uint64_t)va_page << 12,
			 flags & 1, addr, 4096,
			 (flags & 2 ? VNPU_PTE_READ : 0) |
				 (flags & 4 ? VNPU_PTE_WRITE : 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vnpu_simhost_config cfg;
	struct vnpu_simhost *h;
	struct reader r = {data, size};
	unsigned ops = 0, retired;
	uint8_t flags = 0, op, n;
	uint32_t ns;

	memset(&cfg, 0, sizeof(cfg));
	cfg.host_mem_size = FUZZ_HOST_MEM;
	cfg.vram_size = FUZZ_VRAM;
	cfg.num_queues = FUZZ_QUEUES;
	cfg.num_contexts = FUZZ_CONTEXTS;
	cfg.num_cores = 1;
	cfg.mode = VNPU_SIM_DETERMINISTIC;
	cfg.test_mode = true;
	cfg.quiet = true;
	if (vnpu_simhost_create(&cfg, &h))
		violated("cannot create the device");
	take(&r, &flags, 1);
	setup(h, flags);
	while (take(&r, &op, 1) && ops++ < FUZZ_MAX_OPS) {
		switch (op % FUZZ_OP_COUNT) {
		case FUZZ_OP_REG:
			op_reg(h, &r);
			break;
		case FUZZ_OP_HOST:
			op_mem(h, &r, false);
			break;
		case FUZZ_OP_VRAM:
			op_mem(h, &r, true);
			break;
		case FUZZ_OP_SUBMIT:
			op_submit(h, &r);
			break;
		case FUZZ_OP_RUN:
			if (take(&r, &n, 1)) {
				retired = vnpu_sim_run(h->sim, n);
				check_invariants(h, n, retired);
			}
			break;
		case FUZZ_OP_CLOCK:
			if (take(&r, &ns, 4))
				vnpu_simhost_advance(h, ns);
			break;
		case FUZZ_OP_PTE:
			op_pte(h, &r);
			break;
		case FUZZ_OP_MAP:
			op_map(h, &r);
			break;
		}
	}
	retired = vnpu_sim_run(h->sim, 4096);
	check_invariants(h, 4096, retired);
	vnpu_simhost_destroy(h);
	return 0;
}
