// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: identity checks, MSI-X interrupts, reset, heartbeat
 * and test injection (docs/hw-spec.md sections 2, 3, 10, 11, 13).
 */
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <drm/drm_drv.h>

#include "vnpu_hw.h"

u64 vnpu_rd64_stable(struct vnpu_device *vdev, u32 lo, u32 hi)
{
	u32 h, l;

	do {
		h = vnpu_rd(vdev, hi);
		l = vnpu_rd(vdev, lo);
	} while (h != vnpu_rd(vdev, hi));
	return (u64)h << 32 | l;
}

int vnpu_hw_init(struct vnpu_device *vdev)
{
	struct device *dev = vdev->drm.dev;
	u32 id = vnpu_rd(vdev, VNPU_REG_ID);

	if (id != VNPU_ID_VALUE) {
		dev_err(dev,
			"ID register reads %#x, expected %#x: not a vnpu\n", id,
			VNPU_ID_VALUE);
		return -ENODEV;
	}
	vdev->hw_version = vnpu_rd(vdev, VNPU_REG_HW_VERSION);
	/* Time limits need Q_CTRL.ABORT and Q_BUSY_US (minor 1). */
	if (vdev->hw_version >> 16 != VNPU_HW_ABI_MAJOR ||
	    (vdev->hw_version & 0xffff) < 1) {
		dev_err(dev,
			"device hardware ABI %u.%u, driver supports %u.1 and later\n",
			vdev->hw_version >> 16, vdev->hw_version & 0xffff,
			VNPU_HW_ABI_MAJOR);
		return -ENODEV;
	}
	/*
	 * Minor 2: queue interrupts coalesce until the handler clears their
	 * status bit, which it does before reading the completion records.
	 */
	vdev->irq_coalesce = (vdev->hw_version & 0xffff) >= 2;
	vdev->caps = vnpu_rd(vdev, VNPU_REG_CAPS);
	vdev->num_hwq =
		min_t(u32, VNPU_CAPS_QUEUES(vdev->caps), VNPU_MAX_QUEUES);
	vdev->num_cores = VNPU_CAPS_CORES(vdev->caps);
	vdev->num_contexts = min_t(u32, vnpu_rd(vdev, VNPU_REG_NUM_CONTEXTS),
				   VNPU_MAX_CONTEXTS);
	vdev->test_mode = !!(vdev->caps & VNPU_CAPS_TEST_MODE);
	vdev->vram_size = vnpu_rd64_stable(vdev, VNPU_REG_VRAM_SIZE_LO,
					   VNPU_REG_VRAM_SIZE_HI);
	vdev->heartbeat_period_us = vnpu_rd(vdev, VNPU_REG_HEARTBEAT_PERIOD_US);
	/* Hang checks sample a few periods; they must fit a time limit. */
	if (!vdev->heartbeat_period_us ||
	    vdev->heartbeat_period_us > VNPU_MAX_HEARTBEAT_PERIOD_US) {
		dev_err(dev, "heartbeat period %u us out of 1..%u\n",
			vdev->heartbeat_period_us, VNPU_MAX_HEARTBEAT_PERIOD_US);
		return -ENODEV;
	}
	if (!vdev->num_hwq || !vdev->num_contexts ||
	    VNPU_CAPS_RING_LOG2_MAX(vdev->caps) < VNPU_RING_LOG2_MIN) {
		dev_err(dev, "device reports no usable queues or contexts\n");
		return -ENODEV;
	}
	return 0;
}

void vnpu_hw_reset(struct vnpu_device *vdev)
{
	vnpu_wr(vdev, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	/* The reset completes inside the write; the read flushes it. */
	vnpu_rd(vdev, VNPU_REG_STATUS);
}

u32 vnpu_hw_heartbeat(struct vnpu_device *vdev)
{
	return vnpu_rd(vdev, VNPU_REG_HEARTBEAT);
}

u64 vnpu_hw_timestamp(struct vnpu_device *vdev)
{
	u32 lo = vnpu_rd(vdev, VNPU_REG_TIMESTAMP_LO); /* latches HI */

	return (u64)vnpu_rd(vdev, VNPU_REG_TIMESTAMP_HI) << 32 | lo;
}

int vnpu_hw_inject(struct vnpu_device *vdev, u32 kind)
{
	if (!vdev->test_mode)
		return -EOPNOTSUPP;
	if (kind != VNPU_INJECT_HANG && kind != VNPU_INJECT_FATAL &&
	    kind != VNPU_INJECT_LOST_IRQ)
		return -EINVAL;
	vnpu_log(vdev, "injecting %s through TEST_INJECT",
		 kind == VNPU_INJECT_HANG    ? "a hang"
		 : kind == VNPU_INJECT_FATAL ? "a fatal error"
					     : "a lost interrupt");
	vnpu_wr(vdev, VNPU_REG_TEST_INJECT, kind);
	return 0;
}

static irqreturn_t vnpu_irq_hard(int irq, void *arg)
{
	return IRQ_WAKE_THREAD;
}

static void vnpu_fail_all_scheds(struct vnpu_device *vdev)
{
	u32 q;

	for (q = 0; q < vdev->num_hwq; q++)
		if (vdev->hwq[q].sched_ready)
			drm_sched_fault(&vdev->hwq[q].sched);
}

static irqreturn_t vnpu_irq_events(int irq, void *arg)
{
	struct vnpu_device *vdev = arg;
	u32 ev;

	/* Clear first: a raise after the clear signals the vector again. */
	vnpu_wr(vdev, VNPU_REG_IRQ_STATUS, VNPU_IRQ_EVENTS);
	ev = vnpu_rd(vdev, VNPU_REG_EVENT_STATUS);
	/* BOOT_DONE stays set: vnpu_fw_boot() polls and clears it. */
	ev &= ~VNPU_EVENT_BOOT_DONE;
	if (!ev)
		return IRQ_HANDLED;
	vnpu_wr(vdev, VNPU_REG_EVENT_STATUS, ev);
	if (ev & VNPU_EVENT_MMU_FAULT)
		vnpu_mmu_handle_faults(vdev);
	if (ev & VNPU_EVENT_FATAL) {
		vnpu_log(vdev, "firmware fatal error, FATAL_CODE %u",
			 vnpu_rd(vdev, VNPU_REG_FATAL_CODE));
		/* Run the timeout handlers now: they reset the device. */
		vnpu_fail_all_scheds(vdev);
	}
	if (ev & (VNPU_EVENT_DOORBELL_ERROR | VNPU_EVENT_QUEUE_ERROR))
		vnpu_log(vdev, "%s error: ERR_CODE %u queue %d value %#x",
			 ev & VNPU_EVENT_DOORBELL_ERROR ? "doorbell" : "queue",
			 vnpu_rd(vdev, VNPU_REG_ERR_CODE),
			 (int)vnpu_rd(vdev, VNPU_REG_ERR_QUEUE),
			 vnpu_rd(vdev, VNPU_REG_ERR_VALUE));
	return IRQ_HANDLED;
}

/*
 * Queue vectors: completions are retired here, in the hard handler, so a
 * job's fence signals without waking the interrupt thread first (a
 * context switch, and under an emulator a host thread hand-off, per job).
 * Only jobs whose commands all succeeded: a failed one may be a fault's,
 * and the fault handling sleeps (the thread). Nothing else is read from
 * the device: under an emulator every register access is a VM exit.
 */
static irqreturn_t vnpu_irq_queue_hard(int irq, void *arg)
{
	struct vnpu_hwq *hwq = arg;

	vnpu_wr(hwq->vdev, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(hwq->index));
	return vnpu_hwq_retire(hwq, true) ? IRQ_WAKE_THREAD : IRQ_HANDLED;
}

static irqreturn_t vnpu_irq_queue(int irq, void *arg)
{
	struct vnpu_hwq *hwq = arg;

	struct vnpu_device *vdev = hwq->vdev;

	vnpu_wr(vdev, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(hwq->index));
	/*
	 * A fault is recorded before the faulting command's completion: take
	 * it now, so the context is marked faulted before its job signals
	 * (the event vector's thread may not have run yet).
	 */
	if (vnpu_rd(vdev, VNPU_REG_FAULTED_CTX_LO) ||
	    vnpu_rd(vdev, VNPU_REG_FAULTED_CTX_HI))
		vnpu_mmu_handle_faults(vdev);
	vnpu_hwq_retire(hwq, false);
	return IRQ_HANDLED;
}

static void *vnpu_irq_dev_id(struct vnpu_device *vdev, u32 v)
{
	return v == VNPU_MSIX_VECTOR_EVENTS ? (void *)vdev
					    : (void *)&vdev->hwq[v - 1];
}

/* Frees the handlers of vectors [0, n), then all the vectors. */
static void vnpu_hw_irq_free(struct vnpu_device *vdev, u32 n)
{
	struct pci_dev *pdev = vdev->pdev;
	u32 v;

	for (v = 0; v < n; v++) {
		irq_update_affinity_hint(pci_irq_vector(pdev, v), NULL);
		free_irq(pci_irq_vector(pdev, v), vnpu_irq_dev_id(vdev, v));
	}
	pci_free_irq_vectors(pdev);
}

/*
 * Queue vectors are spread over the CPUs (a hint, which an administrator
 * or irqbalance may override): QUEUE_CREATE picks a hardware queue whose
 * interrupt goes to the calling CPU (vnpu_queue.c).
 */
int vnpu_hw_irq_init(struct vnpu_device *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	int node = dev_to_node(&pdev->dev);
	u32 nvec = VNPU_MSIX_VECTORS(vdev->num_hwq), v;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, nvec, nvec, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot enable %u MSI-X vectors: %d\n",
			nvec, ret);
		return ret;
	}
	for (v = 0; v < nvec; v++) {
		bool events = v == VNPU_MSIX_VECTOR_EVENTS;
		irq_handler_t hard =
			events ? vnpu_irq_hard : vnpu_irq_queue_hard;
		irq_handler_t thread =
			events ? vnpu_irq_events : vnpu_irq_queue;
		int irq = pci_irq_vector(pdev, v);
		unsigned int cpu;

		ret = request_threaded_irq(irq, hard, thread, 0,
					   VNPU_DRIVER_NAME,
					   vnpu_irq_dev_id(vdev, v));
		if (ret) {
			vnpu_hw_irq_free(vdev, v);
			return ret;
		}
		if (!events) {
			cpu = cpumask_local_spread(v - 1, node);
			irq_set_affinity_and_hint(irq, cpumask_of(cpu));
		}
	}
	return 0;
}

void vnpu_hw_irq_sync(struct vnpu_device *vdev)
{
	u32 v;

	for (v = 0; v < VNPU_MSIX_VECTORS(vdev->num_hwq); v++)
		synchronize_irq(pci_irq_vector(vdev->pdev, v));
}

void vnpu_hw_irq_fini(struct vnpu_device *vdev)
{
	vnpu_hw_irq_free(vdev, VNPU_MSIX_VECTORS(vdev->num_hwq));
}
