/* SPDX-License-Identifier: MIT */
/*
 * A vnpu queue as its host drives it (include/vnpu/hw_cmd.h): programming
 * the queue registers, writing commands into ring slots, reading completion
 * records and DONE_SEQ. Shared by the test host and the runtime's sim
 * backend; the caller keeps tail and seqno bookkeeping.
 */
#ifndef VNPU_RING_H
#define VNPU_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "vnpu/hw_cmd.h"
#include "vnpu_sim.h"

/* CPU views of a queue's command ring and completion ring. */
struct vnpu_ring_view {
	void *cmds; /* entries * VNPU_CMD_SIZE bytes */
	void *cpls; /* entries * VNPU_CPL_SIZE bytes */
	uint32_t entries;
};

/* Writes the queue's ring, completion and context registers and enables
 * it; true when the device accepted the configuration. */
bool vnpu_ring_program(struct vnpu_sim *sim, unsigned q, uint64_t ring_bus,
		       uint64_t cpl_bus, unsigned ring_log2, unsigned ctx,
		       bool irq_enable);
/* Copies cmd with `seqno` into ring slot `slot`. */
void vnpu_ring_write(const struct vnpu_ring_view *v, uint32_t slot,
		     const struct vnpu_cmd *cmd, uint64_t seqno);
/* The completion record in slot `slot`. */
void vnpu_ring_read_cpl(const struct vnpu_ring_view *v, uint32_t slot,
			struct vnpu_cpl *out);
/* Tells the device that slots up to, not including, tail hold commands. */
void vnpu_ring_doorbell(struct vnpu_sim *sim, unsigned q, uint32_t tail);
/* DONE_SEQ of queue q, read consistently across its two halves. */
uint64_t vnpu_ring_done_seq(struct vnpu_sim *sim, unsigned q);

#endif /* VNPU_RING_H */
