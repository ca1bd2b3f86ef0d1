// SPDX-License-Identifier: MIT
/*
 * The QEMU device against baselines measured in the same run:
 *  - DMA bandwidth guest RAM -> VRAM (DMA_COPY commands, threads mode),
 *    against memcpy of the same size in this process;
 *  - a GEMM launched through the device against the same GEMM on the
 *    firmware simulator in-process (firmware-sim/host), both threads mode
 *    with the same number of cores. Goal: within 10%.
 * Times are from the doorbell to DONE_SEQ (polled over qtest for the
 * device, in-process for the simulator), medians of RUNS runs; commands and
 * argument blocks are written before the clock starts. Needs $VNPU_QEMU and
 * $VNPU_FW; prints ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnpu_qdev.h"
#include "vnpu_simhost.h"
#include "bench.h"

#define COPY_BYTES (16ull << 20)
#define COPY_CMDS 4
#define RUNS 9
#define GEMM_N 768
#define CORES 2

static struct vnpu_tensor mat(uint32_t buf, int64_t rows, int64_t cols)
{
	const int64_t sizes[2] = {rows, cols};

	return vnpu_tensor_dense(buf, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, sizes);
}

static struct vnpu_kp_gemm gemm_params(void)
{
	struct vnpu_kp_gemm g;

	memset(&g, 0, sizeof(g));
	g.alpha = 1.0f;
	g.a = mat(0, GEMM_N, GEMM_N);
	g.b = mat(1, GEMM_N, GEMM_N);
	g.out = mat(2, GEMM_N, GEMM_N);
	return g;
}

static double bench_memcpy(void)
{
	char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
	double times[RUNS];

	if (!src || !dst)
		abort();
	memset(src, 1, COPY_BYTES);
	memset(dst, 2, COPY_BYTES);
	for (int r = 0; r < RUNS; r++) {
		double t = bench_now();

		for (int i = 0; i < COPY_CMDS; i++) {
			src[i] = (char)r;
			memcpy(dst, src, COPY_BYTES);
		}
		times[r] = bench_now() - t;
	}
	if (dst[0] != (char)(RUNS - 1) || dst[COPY_BYTES - 1] != 1)
		abort();
	free(src);
	free(dst);
	return (double)COPY_BYTES * COPY_CMDS / bench_median(times, RUNS);
}

static double bench_device_copy(struct vq *v)
{
	uint64_t src_pa, dst_off, seq = 0;
	uint64_t src = vq_alloc_map(v, 0, false, COPY_BYTES, &src_pa);
	uint64_t dst = vq_alloc_map(v, 0, true, COPY_BYTES, &dst_off);
	double times[RUNS];

	qt_memset(v->qt, src_pa, 0x5a, COPY_BYTES);
	for (int r = 0; r < RUNS; r++) {
		double t;

		for (int i = 0; i < COPY_CMDS; i++)
			seq = vq_push(v, 0, vnpu_copy_cmd(src, dst, COPY_BYTES));
		t = bench_now();
		vq_ring(v, 0);
		if (!vq_wait(v, 0, seq, 60000))
			abort();
		times[r] = bench_now() - t;
	}
	if (qt_readl(v->qt, VQ_BAR4_ADDR + dst_off + COPY_BYTES - 4) !=
	    0x5a5a5a5a)
		abort();
	return (double)COPY_BYTES * COPY_CMDS / bench_median(times, RUNS);
}

static double bench_device_gemm(struct vq *v)
{
	uint64_t bytes = (uint64_t)GEMM_N * GEMM_N * 4, off[3];
	struct vnpu_kargs_buffer bufs[3];
	struct vnpu_kp_gemm g = gemm_params();
	double times[RUNS];

	for (int i = 0; i < 3; i++) {
		bufs[i].va = vq_alloc_map(v, 0, true, bytes, &off[i]);
		bufs[i].size = bytes;
		bufs[i].access = i == 2 ? VNPU_ACCESS_READ | VNPU_ACCESS_WRITE
					: VNPU_ACCESS_READ;
		bufs[i].reserved = 0;
		if (i < 2)
			qt_memset(v->qt, VQ_BAR4_ADDR + off[i], 0x3c, bytes);
	}
	/* The argument block is written and mapped once; only the launch is
	 * timed (doorbell to DONE_SEQ). */
	struct vnpu_kargs_header hdr = {3, sizeof(g), 0};
	uint8_t blob[sizeof(hdr) + sizeof(bufs) + sizeof(g)];
	uint64_t args_pa = vq_ram_alloc(v, sizeof(blob));
	uint64_t args_va = 0x6000000000ull;
	struct vnpu_cmd cmd = vnpu_cmd_of(VNPU_OP_KERNEL_LAUNCH);

	memcpy(blob, &hdr, sizeof(hdr));
	memcpy(blob + sizeof(hdr), bufs, sizeof(bufs));
	memcpy(blob + sizeof(hdr) + sizeof(bufs), &g, sizeof(g));
	qt_memwrite(v->qt, args_pa, blob, sizeof(blob));
	vq_map(v, 0, args_va, false, args_pa, 4096, VNPU_PTE_READ);
	cmd.launch.kernel_id = VNPU_KERNEL_GEMM;
	cmd.launch.block_count = 64;
	cmd.launch.args_va = args_va;
	cmd.launch.args_size = sizeof(blob);
	for (int r = 0; r < RUNS + 1; r++) {
		uint64_t seq = vq_push(v, 0, cmd);
		double t = bench_now();

		vq_ring(v, 0);
		if (!vq_wait(v, 0, seq, 60000) ||
		    vq_cpl(v, 0, seq).status != VNPU_STATUS_OK)
			abort();
		t = bench_now() - t;
		if (r) /* the first run warms up */
			times[r - 1] = t;
	}
	return bench_median(times, RUNS);
}

static double bench_sim_gemm(void)
{
	struct vnpu_simhost_config cfg = {
		.host_mem_size = 16ull << 20,
		.vram_size = 64ull << 20,
		.num_cores = CORES,
		.mode = VNPU_SIM_THREADS,
		.real_clock = true,
		.quiet = true,
	};
	struct vnpu_simhost *h;
	uint64_t bytes = (uint64_t)GEMM_N * GEMM_N * 4;
	struct vnpu_kargs_buffer bufs[3];
	struct vnpu_kp_gemm g = gemm_params();
	double times[RUNS];

	if (vnpu_simhost_create(&cfg, &h) ||
	    vnpu_simhost_boot(h) != VNPU_BOOT_READY ||
	    vnpu_simhost_ctx_init(h, 0, false) ||
	    vnpu_simhost_queue_init(h, 0, 0, 6, false))
		abort();
	for (int i = 0; i < 3; i++) {
		void *p = vnpu_simhost_alloc_map(h, 0, true, bytes,
						 VNPU_PTE_READ | VNPU_PTE_WRITE,
						 &bufs[i].va);

		if (!p)
			abort();
		memset(p, i < 2 ? 0x3c : 0, bytes);
		bufs[i].size = bytes;
		bufs[i].access = i == 2 ? VNPU_ACCESS_READ | VNPU_ACCESS_WRITE
					: VNPU_ACCESS_READ;
		bufs[i].reserved = 0;
	}
	uint32_t args_size = 0;
	uint64_t args_va = vnpu_simhost_write_args(h, 0, bufs, 3, &g, sizeof(g),
						   &args_size);

	if (!args_va)
		abort();
	for (int r = 0; r < RUNS + 1; r++) {
		uint64_t seq = vnpu_simhost_push(
			h, 0,
			vnpu_launch_cmd(VNPU_KERNEL_GEMM, 64, args_va,
						args_size));
		double t = bench_now();

		vnpu_simhost_ring(h, 0);
		if (vnpu_simhost_wait(h, 0, seq, 60000) ||
		    vnpu_simhost_cpl(h, 0, seq).status != VNPU_STATUS_OK)
			abort();
		t = bench_now() - t;
		if (r)
			times[r - 1] = t;
	}
	vnpu_simhost_destroy(h);
	return bench_median(times, RUNS);
}

int main(void)
{
	char opts[128];
	struct vq *v;
	double mc, dev, sim_t, dev_t, flops;

	if (!qt_qemu_binary()) {
		printf("SKIP: no QEMU binary (set VNPU_QEMU or -Dqemu=PATH)\n");
		return 77;
	}
	snprintf(opts, sizeof(opts), "vram-size=512M,cores=%d", CORES);
	v = vq_start(0, opts, "-m 1G");
	v->ram_size = 1ull << 30;
	if (vq_boot(v) != VNPU_BOOT_READY)
		abort();
	vq_ctx_init(v, 0);
	vq_queue_init(v, 0, 0, 6, false);

	mc = bench_memcpy();
	dev = bench_device_copy(v);
	printf("DMA guest RAM -> VRAM, %d x %llu MiB DMA_COPY from contiguous "
	       "guest memory: %.2f GB/s; memcpy %.2f GB/s (glibc, this "
	       "process); ratio %.2f (goal >= 0.8); medians of %d\n",
	       COPY_CMDS, COPY_BYTES >> 20, dev / 1e9, mc / 1e9, dev / mc,
	       RUNS);

	dev_t = bench_device_gemm(v);
	vq_stop(v);
	sim_t = bench_sim_gemm();
	flops = 2.0 * GEMM_N * GEMM_N * GEMM_N;
	printf("GEMM f32 %d^3 on %d cores: QEMU device %.2f ms (%.1f GFLOPS), "
	       "in-process simulator %.2f ms (%.1f GFLOPS); "
	       "device/sim throughput ratio %.2f\n",
	       GEMM_N, CORES, dev_t * 1e3, flops / dev_t / 1e9, sim_t * 1e3,
	       flops / sim_t / 1e9, sim_t / dev_t);
	return 0;
}
