// SPDX-License-Identifier: MIT
/* A vnpu queue as its host drives it (see vnpu_ring.h). */
#include <string.h>

#include "vnpu/hw_regs.h"
#include "vnpu_ring.h"

bool vnpu_ring_program(struct vnpu_sim *sim, unsigned q, uint64_t ring_bus,
		       uint64_t cpl_bus, unsigned ring_log2, unsigned ctx,
		       bool irq_enable)
{
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_LO),
			   (uint32_t)ring_bus);
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_HI),
			   (uint32_t)(ring_bus >> 32));
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_LO),
			   (uint32_t)cpl_bus);
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_HI),
			   (uint32_t)(cpl_bus >> 32));
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_RING_LOG2), ring_log2);
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_CTX), ctx);
	vnpu_sim_reg_write(sim, VNPU_QUEUE_REG(q, VNPU_Q_CTRL),
			   VNPU_Q_CTRL_ENABLE |
				   (irq_enable ? VNPU_Q_CTRL_IRQ_ENABLE : 0));
	return vnpu_sim_reg_read(sim, VNPU_QUEUE_REG(q, VNPU_Q_STATUS)) &
	       VNPU_Q_STATUS_ENABLED;
}

void vnpu_ring_write(const struct vnpu_ring_view *v, uint32_t slot,
		     const struct vnpu_cmd *cmd, uint64_t seqno)
{
	struct vnpu_cmd c = *cmd;

	c.hdr.seqno = seqno;
	memcpy((uint8_t *)v->cmds + (uint64_t)slot * VNPU_CMD_SIZE, &c,
	       sizeof(c));
}

void vnpu_ring_read_cpl(const struct vnpu_ring_view *v, uint32_t slot,
			struct vnpu_cpl *out)
{
	memcpy(out, (const uint8_t *)v->cpls + (uint64_t)slot * VNPU_CPL_SIZE,
	       sizeof(*out));
}

void vnpu_ring_doorbell(struct vnpu_sim *sim, unsigned q, uint32_t tail)
{
	vnpu_sim_reg_write(sim, VNPU_DOORBELL(q), tail);
}

uint64_t vnpu_ring_done_seq(struct vnpu_sim *sim, unsigned q)
{
	uint32_t hi, lo;

	/* DONE_SEQ may move between the two reads: re-read HI. */
	do {
		hi = vnpu_sim_reg_read(sim,
				       VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_HI));
		lo = vnpu_sim_reg_read(sim,
				       VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_LO));
	} while (hi != vnpu_sim_reg_read(
			       sim, VNPU_QUEUE_REG(q, VNPU_Q_DONE_SEQ_HI)));
	return (uint64_t)hi << 32 | lo;
}
