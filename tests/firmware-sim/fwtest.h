/* SPDX-License-Identifier: MIT */
/* Shared set-up for the firmware-sim tests: a booted device with contexts
 * and queues, through the in-process host. */
#ifndef VNPU_TESTS_FWTEST_H
#define VNPU_TESTS_FWTEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu/hw_cmd.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_regs.h"
#include "vnpu/hw_status.h"
#include "vnpu/kernel_abi.h"
#include "vnpu_simhost.h"

#define RW (VNPU_PTE_READ | VNPU_PTE_WRITE)
#define RO VNPU_PTE_READ
#define WO VNPU_PTE_WRITE

/* doorbell_runs_short: the vnpu_sim_config option (threaded mode). */
static inline struct vnpu_simhost *
ft_host_opts(enum vnpu_sim_mode mode, bool test_mode, bool doorbell_runs_short)
{
	struct vnpu_simhost_config cfg;
	struct vnpu_simhost *h;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = mode;
	cfg.test_mode = test_mode;
	cfg.real_clock = mode == VNPU_SIM_THREADS;
	cfg.quiet = true;
	cfg.doorbell_runs_short = doorbell_runs_short;
	ck_assert_int_eq(vnpu_simhost_create(&cfg, &h), 0);
	return h;
}

static inline struct vnpu_simhost *ft_host(enum vnpu_sim_mode mode,
					   bool test_mode)
{
	return ft_host_opts(mode, test_mode, false);
}

/* Booted, contexts 0 and 1 enabled, queue q on context q % 2 (log2 4). */
static inline struct vnpu_simhost *
ft_ready_opts(enum vnpu_sim_mode mode, bool test_mode, bool doorbell_runs_short)
{
	struct vnpu_simhost *h =
		ft_host_opts(mode, test_mode, doorbell_runs_short);

	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 1, false), 0);
	for (unsigned q = 0; q < 4; q++)
		ck_assert_int_eq(vnpu_simhost_queue_init(h, q, q % 2, 4, true),
				 0);
	return h;
}

static inline struct vnpu_simhost *ft_ready(enum vnpu_sim_mode mode,
					    bool test_mode)
{
	return ft_ready_opts(mode, test_mode, false);
}

static inline uint32_t ft_rd(struct vnpu_simhost *h, uint32_t off)
{
	return vnpu_simhost_rd(h, off);
}

static inline void ft_wr(struct vnpu_simhost *h, uint32_t off, uint32_t v)
{
	vnpu_simhost_wr(h, off, v);
}

static inline uint32_t ft_exec(struct vnpu_simhost *h, unsigned q,
			       struct vnpu_cmd cmd, struct vnpu_cpl *cpl)
{
	return vnpu_simhost_exec(h, q, cmd, cpl);
}

static inline uint32_t ft_qreg(struct vnpu_simhost *h, unsigned q, uint32_t reg)
{
	return vnpu_simhost_rd(h, VNPU_QUEUE_REG(q, reg));
}

static inline uint32_t ft_creg(struct vnpu_simhost *h, unsigned c, uint32_t reg)
{
	return vnpu_simhost_rd(h, VNPU_CTX_REG(c, reg));
}

static inline uint64_t ft_fault_va(struct vnpu_simhost *h, unsigned c)
{
	return (uint64_t)ft_creg(h, c, VNPU_CTX_FAULT_VA_HI) << 32 |
	       ft_creg(h, c, VNPU_CTX_FAULT_VA_LO);
}

/* Clears a context's pending fault (driver recovery). */
static inline void ft_clear_fault(struct vnpu_simhost *h, unsigned c)
{
	vnpu_simhost_wr(h, VNPU_CTX_REG(c, VNPU_CTX_FAULT_STATUS),
			VNPU_FAULT_PENDING);
}

static inline struct vnpu_kargs_buffer ft_kbuf(uint64_t va, uint64_t size,
					       uint32_t access)
{
	struct vnpu_kargs_buffer b;

	memset(&b, 0, sizeof(b));
	b.va = va;
	b.size = size;
	b.access = access;
	return b;
}

/* A dense row-major ND tensor descriptor. */
static inline struct vnpu_tensor ft_tensor(uint32_t buffer, uint32_t dtype,
					   uint32_t ndim, const int64_t *sizes)
{
	return vnpu_tensor_dense(buffer, dtype, VNPU_FORMAT_ND, ndim, sizes);
}

/* xorshift for test data. */
static inline uint32_t ft_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static inline void ft_fill_random(void *p, size_t n, uint64_t seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)ft_rand(&seed);
}

static inline int ft_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* VNPU_TESTS_FWTEST_H */
