/* SPDX-License-Identifier: GPL-2.0 */
/* vnpu DRM accel driver: register access and device-level hardware control. */
#ifndef VNPU_HW_H
#define VNPU_HW_H

#include <linux/io.h>

#include "vnpu_drv.h"

static inline u32 vnpu_rd(struct vnpu_device *vdev, u32 offset)
{
	return readl(vdev->regs + offset);
}

static inline void vnpu_wr(struct vnpu_device *vdev, u32 offset, u32 value)
{
	writel(value, vdev->regs + offset);
}

static inline u32 vnpu_qrd(struct vnpu_hwq *hwq, u32 reg)
{
	return vnpu_rd(hwq->vdev, VNPU_QUEUE_REG(hwq->index, reg));
}

static inline void vnpu_qwr(struct vnpu_hwq *hwq, u32 reg, u32 value)
{
	vnpu_wr(hwq->vdev, VNPU_QUEUE_REG(hwq->index, reg), value);
}

/* A 64-bit LO/HI pair that may move between the two reads. */
u64 vnpu_rd64_stable(struct vnpu_device *vdev, u32 lo, u32 hi);

int vnpu_hw_init(struct vnpu_device *vdev);
int vnpu_hw_irq_init(struct vnpu_device *vdev);
void vnpu_hw_irq_fini(struct vnpu_device *vdev);
void vnpu_hw_irq_sync(struct vnpu_device *vdev);
void vnpu_hw_reset(struct vnpu_device *vdev);
u32 vnpu_hw_heartbeat(struct vnpu_device *vdev);
u64 vnpu_hw_timestamp(struct vnpu_device *vdev);
int vnpu_hw_inject(struct vnpu_device *vdev, u32 kind);

#endif /* VNPU_HW_H */
