// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_cmd (tests/fuzz/corpus/): small inputs in
 * the format of fuzz_format.h covering every opcode, the register side
 * effects and the error paths. Usage: gen_corpus DIR
 */
#include <stdio.h>
#include <string.h>

#include "fuzz_format.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu/hw_status.h"

struct seed {
	uint8_t bytes[8192];
	size_t len;
};

static void put(struct seed *s, const void *p, size_t n)
{
	if (s->len + n <= sizeof(s->bytes)) {
		memcpy(s->bytes + s->len, p, n);
		s->len += n;
	}
}

static void u8(struct seed *s, uint8_t v)
{
	put(s, &v, 1);
}

static void reg(struct seed *s, uint16_t off, uint32_t value)
{
	u8(s, FUZZ_OP_REG);
	put(s, &off, 2);
	put(s, &value, 4);
}

static void mem(struct seed *s, bool vram, uint16_t off, const void *p,
		uint8_t len)
{
	u8(s, vram ? FUZZ_OP_VRAM : FUZZ_OP_HOST);
	put(s, &off, 2);
	u8(s, len);
	put(s, p, len);
}

static void submit(struct seed *s, uint8_t q, struct vnpu_cmd c)
{
	u8(s, FUZZ_OP_SUBMIT);
	u8(s, q);
	put(s, &c, sizeof(c));
}

static void run(struct seed *s, uint8_t budget)
{
	u8(s, FUZZ_OP_RUN);
	u8(s, budget);
}

static void clock_ns(struct seed *s, uint32_t ns)
{
	u8(s, FUZZ_OP_CLOCK);
	put(s, &ns, 4);
}

static void pte(struct seed *s, uint8_t ctx, uint32_t page, uint8_t level,
		uint64_t value)
{
	u8(s, FUZZ_OP_PTE);
	u8(s, ctx);
	put(s, &page, 4);
	u8(s, level);
	put(s, &value, 8);
}

static void map(struct seed *s, uint8_t ctx, uint16_t va_page, uint16_t page,
		uint8_t flags)
{
	u8(s, FUZZ_OP_MAP);
	u8(s, ctx);
	put(s, &va_page, 2);
	put(s, &page, 2);
	u8(s, flags);
}

static struct vnpu_tensor tensor(uint32_t buffer, uint32_t dtype, int64_t n0,
				 int64_t n1)
{
	struct vnpu_tensor t;

	memset(&t, 0, sizeof(t));
	t.buffer = buffer;
	t.dtype = dtype;
	t.format = VNPU_FORMAT_ND;
	t.ndim = 2;
	t.sizes[0] = n0;
	t.sizes[1] = n1;
	t.strides[0] = n1;
	t.strides[1] = 1;
	return t;
}

/* Puts an argument block in the host window at `off` (255-byte pieces) and
 * submits the launch. */
static void launch(struct seed *s, uint8_t q, uint32_t kernel, uint32_t blocks,
		   const struct vnpu_kargs_buffer *bufs, uint32_t nbufs,
		   const void *params, uint32_t psize)
{
	uint8_t args[4096];
	struct vnpu_kargs_header hdr = {nbufs, psize, 0};
	size_t size = sizeof(hdr) + nbufs * sizeof(*bufs) + psize;
	const uint16_t off = 0x8000;
	struct vnpu_cmd c;

	memcpy(args, &hdr, sizeof(hdr));
	memcpy(args + sizeof(hdr), bufs, nbufs * sizeof(*bufs));
	memcpy(args + sizeof(hdr) + nbufs * sizeof(*bufs), params, psize);
	for (size_t done = 0; done < size; done += 255) {
		size_t n = size - done < 255 ? size - done : 255;

		mem(s, false, (uint16_t)(off + done), args + done, (uint8_t)n);
	}
	c = vnpu_launch_cmd(kernel, blocks, FUZZ_HOST_VA + off, (uint32_t)size);
	c.hdr.flags = VNPU_CMD_F_IRQ;
	submit(s, q, c);
}

static struct vnpu_kargs_buffer kbuf(uint64_t va, uint64_t size,
				     uint32_t access)
{
	struct vnpu_kargs_buffer b = {va, size, access, 0};

	return b;
}

static int save(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->bytes, 1, s->len, f) != s->len || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const uint64_t hv = FUZZ_HOST_VA, vv = FUZZ_VRAM_VA;
	const char *dir;
	struct seed s;
	struct vnpu_cmd c;
	int err = 0;
	uint8_t pattern[64];

	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	for (unsigned i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 1);

#define SEED(name, ...)                                                        \
	do {                                                                   \
		memset(&s, 0, sizeof(s));                                      \
		__VA_ARGS__;                                                   \
		err |= save(dir, name, &s);                                    \
	} while (0)

	SEED("nop", {
		u8(&s, 0);
		submit(&s, 0, vnpu_cmd_of(VNPU_OP_NOP));
		c = vnpu_cmd_of(VNPU_OP_NOP);
		c.hdr.flags = VNPU_CMD_F_IRQ;
		submit(&s, 1, c);
		run(&s, 8);
	});
	SEED("bad-header", {
		u8(&s, 0);
		c = vnpu_cmd_of(0x42);
		submit(&s, 0, c);
		c = vnpu_cmd_of(VNPU_OP_NOP);
		c.hdr.flags = 0x80;
		c.hdr.reserved0 = 1;
		submit(&s, 0, c);
		c = vnpu_cmd_of(VNPU_OP_NOP);
		c.raw[5] = 1;
		submit(&s, 1, c);
		run(&s, 8);
	});
	SEED("copy", {
		u8(&s, 6);
		mem(&s, false, 0x0ff0, pattern, 64);
		c = vnpu_cmd_of(VNPU_OP_DMA_COPY);
		c.copy.src_va = hv + 0x0ff0;
		c.copy.dst_va = vv + 0x1ffd;
		c.copy.size = 64;
		submit(&s, 0, c);
		c.copy.src_va = vv + 0x1ffd;
		c.copy.dst_va = hv + 0x3000;
		submit(&s, 0, c);
		run(&s, 4);
	});
	SEED("copy-errors", {
		u8(&s, 0);
		c = vnpu_cmd_of(VNPU_OP_DMA_COPY);
		c.copy.src_va = hv;
		c.copy.dst_va = ~0ull - 4;
		c.copy.size = 16;
		submit(&s, 0, c);
		c.copy.dst_va = VNPU_VA_LIMIT - 8;
		submit(&s, 0, c);
		c.copy.size = 0;
		submit(&s, 0, c);
		c.copy.dst_va = hv + 0x20000;
		c.copy.size = 0x20000;
		submit(&s, 1, c);
		run(&s, 8);
		reg(&s, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), 1);
		run(&s, 8);
	});
	SEED("fill", {
		u8(&s, 0);
		for (uint32_t w = 0; w <= 4; w++) {
			c = vnpu_cmd_of(VNPU_OP_FILL);
			c.fill.dst_va = vv + 0x100 + w;
			c.fill.size = 4096 * w + 8;
			c.fill.pattern = 0xa1b2c3d4;
			c.fill.width = w;
			submit(&s, 0, c);
			run(&s, 2);
		}
	});
	SEED("fence", {
		u8(&s, 0);
		c = vnpu_cmd_of(VNPU_OP_FENCE_WAIT);
		c.fence.va = hv + 0x100;
		c.fence.value = 3;
		submit(&s, 1, c);
		run(&s, 4);
		c.hdr.opcode = VNPU_OP_FENCE_SIGNAL;
		submit(&s, 0, c);
		run(&s, 4);
		c.hdr.opcode = VNPU_OP_FENCE_WAIT;
		c.fence.value = 9;
		submit(&s, 1, c);
		mem(&s, false, 0x100, "\x09", 1);
		run(&s, 4);
		c.fence.va = hv + 0x104;
		submit(&s, 0, c);
		run(&s, 4);
	});
	SEED("timestamp", {
		u8(&s, 0);
		clock_ns(&s, 123456789);
		c = vnpu_cmd_of(VNPU_OP_TIMESTAMP);
		c.timestamp.va = vv + 0x800;
		submit(&s, 0, c);
		c.timestamp.va = vv + 0x804;
		submit(&s, 0, c);
		run(&s, 4);
	});
	for (uint32_t kind = 0; kind <= 5; kind++) {
		char name[32];

		snprintf(name, sizeof(name), "inject-%u", kind);
		SEED(name, {
			u8(&s, 0);
			c = vnpu_cmd_of(VNPU_OP_TEST_INJECT);
			c.hdr.flags = VNPU_CMD_F_IRQ;
			c.inject.kind = kind;
			c.inject.va = kind == VNPU_TEST_MMU_FAULT ? vv + 64 : 0;
			c.inject.write = kind == VNPU_TEST_MMU_FAULT;
			submit(&s, 0, c);
			submit(&s, 1, vnpu_cmd_of(VNPU_OP_NOP));
			run(&s, 4);
			clock_ns(&s, 5000000);
			reg(&s, VNPU_REG_CTRL, VNPU_CTRL_RESET);
			run(&s, 4);
		});
	}
	SEED("launch-fill", {
		struct vnpu_kp_fill p;
		struct vnpu_kargs_buffer b = kbuf(vv, 4096, VNPU_ACCESS_WRITE);

		u8(&s, 0);
		memset(&p, 0, sizeof(p));
		p.out = tensor(0, VNPU_DTYPE_F32, 16, 64);
		p.value = 1.5;
		launch(&s, 0, VNPU_KERNEL_FILL, 3, &b, 1, &p, sizeof(p));
		run(&s, 2);
	});
	SEED("launch-cast", {
		struct vnpu_kp_cast p;
		struct vnpu_kargs_buffer b[2] = {
			kbuf(hv + 0x1000, 1024, VNPU_ACCESS_READ),
			kbuf(vv + 0x1000, 1024, VNPU_ACCESS_WRITE),
		};

		u8(&s, 0);
		mem(&s, false, 0x1000, pattern, 64);
		memset(&p, 0, sizeof(p));
		p.src = tensor(0, VNPU_DTYPE_F32, 16, 16);
		p.out = tensor(1, VNPU_DTYPE_I32, 16, 16);
		launch(&s, 0, VNPU_KERNEL_CAST, 2, b, 2, &p, sizeof(p));
		run(&s, 2);
	});
	SEED("launch-binary", {
		struct vnpu_kp_binary p;
		struct vnpu_kargs_buffer b[3] = {
			kbuf(hv + 0x1000, 256, VNPU_ACCESS_READ),
			kbuf(vv + 0x2000, 256, VNPU_ACCESS_READ),
			kbuf(hv + 0x2ff0, 256, VNPU_ACCESS_WRITE),
		};

		u8(&s, 0);
		memset(&p, 0, sizeof(p));
		p.op = VNPU_BINARY_ADD;
		p.alpha = 1.0;
		p.a = tensor(0, VNPU_DTYPE_F32, 8, 8);
		p.b = tensor(1, VNPU_DTYPE_F32, 1, 8);
		p.b.strides[0] = 0;
		p.out = tensor(2, VNPU_DTYPE_F32, 8, 8);
		launch(&s, 0, VNPU_KERNEL_BINARY, 4, b, 3, &p, sizeof(p));
		run(&s, 2);
	});
	SEED("launch-gemm", {
		struct vnpu_kp_gemm p;
		struct vnpu_kargs_buffer b[3] = {
			kbuf(vv, 4 * 6 * 4, VNPU_ACCESS_READ),
			kbuf(hv + 0x1000, 6 * 5 * 4, VNPU_ACCESS_READ),
			kbuf(vv + 0x3000, 4 * 5 * 4,
			     VNPU_ACCESS_READ | VNPU_ACCESS_WRITE),
		};

		u8(&s, 0);
		memset(&p, 0, sizeof(p));
		p.alpha = 1.0f;
		p.beta = 0.5f;
		p.a = tensor(0, VNPU_DTYPE_F32, 4, 6);
		p.b = tensor(1, VNPU_DTYPE_F32, 6, 5);
		p.out = tensor(2, VNPU_DTYPE_F32, 4, 5);
		launch(&s, 1, VNPU_KERNEL_GEMM, 2, b, 3, &p, sizeof(p));
		run(&s, 2);
	});
	SEED("launch-errors", {
		struct vnpu_kp_fill p;
		struct vnpu_kargs_buffer b = kbuf(vv, 4096, VNPU_ACCESS_WRITE);

		u8(&s, 0);
		memset(&p, 0, sizeof(p));
		p.out = tensor(0, 99, 16, 64);
		launch(&s, 0, VNPU_KERNEL_FILL, 1, &b, 1, &p, sizeof(p));
		launch(&s, 0, 77, 1, &b, 1, &p, sizeof(p));
		launch(&s, 0, VNPU_KERNEL_FILL, 0, &b, 1, &p, sizeof(p));
		b = kbuf(0x900000, 4096, VNPU_ACCESS_WRITE);
		p.out = tensor(0, VNPU_DTYPE_F32, 16, 64);
		launch(&s, 0, VNPU_KERNEL_FILL, 1, &b, 1, &p, sizeof(p));
		run(&s, 8);
	});
	SEED("registers", {
		u8(&s, 0);
		reg(&s, VNPU_REG_IRQ_MASK, 0xffffffff);
		submit(&s, 0, vnpu_cmd_of(VNPU_OP_NOP));
		reg(&s, VNPU_DOORBELL(0), 99);
		reg(&s, VNPU_DOORBELL(1), 3);
		run(&s, 8);
		reg(&s, VNPU_REG_IRQ_MASK, 0);
		reg(&s, VNPU_REG_IRQ_STATUS, 0xffffffff);
		reg(&s, VNPU_REG_EVENT_STATUS, 0xffffffff);
		reg(&s, VNPU_QUEUE_REG(1, VNPU_Q_RING_LOG2), 9);
		reg(&s, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), 0);
		reg(&s, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), 3);
		reg(&s, VNPU_CTX_REG(1, VNPU_CTX_CTRL), 2);
		reg(&s, VNPU_REG_TEST_INJECT, VNPU_INJECT_LOST_IRQ);
		reg(&s, 0x1233, 5);
		reg(&s, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
		run(&s, 8);
		reg(&s, VNPU_REG_TEST_INJECT, VNPU_INJECT_HANG);
		submit(&s, 0, vnpu_cmd_of(VNPU_OP_NOP));
		run(&s, 8);
		reg(&s, VNPU_REG_CTRL, VNPU_CTRL_RESET | VNPU_CTRL_BOOT);
		run(&s, 8);
	});
	SEED("ring-fatal", {
		u8(&s, 0);
		reg(&s, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), 0);
		reg(&s, VNPU_QUEUE_REG(0, VNPU_Q_RING_BASE_LO),
		    (uint32_t)VNPU_SIMHOST_BUS_BASE);
		reg(&s, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), 3);
		reg(&s, VNPU_DOORBELL(0), 1);
		run(&s, 8);
		reg(&s, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	});
	SEED("bad-ptes", {
		u8(&s, 1);
		pte(&s, 0, 0x900, 2, 0x1000 | 0xb | (1ull << 7));
		pte(&s, 1, 0x901, 2, (2ull << 20) | 0xb);
		pte(&s, 0, 0x40000, 1, VNPU_SIMHOST_BUS_BASE | 1);
		pte(&s, 0, 0x80000, 0, 0x7);
		c = vnpu_cmd_of(VNPU_OP_DMA_COPY);
		c.copy.src_va = 0x900000;
		c.copy.dst_va = vv;
		c.copy.size = 8;
		submit(&s, 0, c);
		c.copy.src_va = 0x901000;
		submit(&s, 1, c);
		c.copy.src_va = 0x40000000;
		submit(&s, 0, c);
		run(&s, 8);
		reg(&s, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), 1);
		reg(&s, VNPU_CTX_REG(0, VNPU_CTX_CTRL), 3);
		c.copy.src_va = 0x80000000;
		submit(&s, 0, c);
		run(&s, 8);
	});
	SEED("map-dma-error", {
		u8(&s, 0);
		map(&s, 0, 0x200, 0, 6);
		map(&s, 0, 0x201, 5, 7);
		map(&s, 1, 0x202, 3, 2);
		c = vnpu_cmd_of(VNPU_OP_DMA_COPY);
		c.copy.src_va = 0x200000;
		c.copy.dst_va = 0x201000;
		c.copy.size = 64;
		submit(&s, 0, c);
		c.copy.src_va = 0x201000;
		c.copy.dst_va = 0x200000;
		submit(&s, 0, c);
		reg(&s, VNPU_CTX_REG(0, VNPU_CTX_CTRL), 3);
		c.copy.src_va = 0x202000;
		submit(&s, 1, c);
		run(&s, 8);
	});
	SEED("wrap", {
		u8(&s, 0);
		for (unsigned i = 0; i < 12; i++) {
			submit(&s, i % 2, vnpu_cmd_of(VNPU_OP_NOP));
			if (i % 3 == 2)
				run(&s, 2);
		}
	});
	return err;
}
