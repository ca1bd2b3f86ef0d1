/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: command status codes (completion records, Q_STATUS, ERR_CODE),
 * boot status codes and fatal error codes.
 */
#ifndef VNPU_HW_STATUS_H
#define VNPU_HW_STATUS_H

#include "hw_types.h"

/* Status of one command, written into its completion record. */
enum vnpu_status {
	VNPU_STATUS_OK = 0,
	VNPU_STATUS_INVALID_OPCODE = 1,	/* unknown opcode */
	VNPU_STATUS_INVALID_FIELD = 2,	/* reserved field or flag not zero, bad enum */
	VNPU_STATUS_MISALIGNED = 3,	/* address or size breaks an alignment rule */
	VNPU_STATUS_OUT_OF_RANGE = 4,	/* size zero/too big, address arithmetic overflows */
	VNPU_STATUS_MMU_FAULT = 5,	/* translation failed; context now faulted */
	VNPU_STATUS_CONTEXT_FAULTED = 6, /* not run: the context has a pending fault */
	VNPU_STATUS_UNKNOWN_KERNEL = 7,	/* kernel id not in the loaded firmware */
	VNPU_STATUS_INVALID_ARGS = 8,	/* kernel argument block or params rejected */
	VNPU_STATUS_UNSUPPORTED = 9,	/* dtype/format combination the kernel lacks */
	VNPU_STATUS_NOT_PERMITTED = 10,	/* test command without test mode */
	VNPU_STATUS_DMA_ERROR = 11,	/* host memory access refused by the bus */
	VNPU_STATUS_TOO_LARGE = 12,	/* operand exceeds the device's staging limit */
	VNPU_STATUS_ABORTED = 13,	/* stopped by the queue's Q_CTRL.ABORT */
	VNPU_STATUS_COUNT,
	/*
	 * Never in a completion record: a driver's verdict on a command that
	 * was executing when the device was reset (or its queue aborted for
	 * another's sake) and may have partly run. It is not run again.
	 */
	VNPU_STATUS_LOST = 0x80,
};

/* BOOT_STATUS register. */
enum vnpu_boot_status {
	VNPU_BOOT_OFF = 0,		/* after power-on or reset */
	VNPU_BOOT_READY = 1,		/* firmware accepted, queues usable */
	VNPU_BOOT_ERR_SIZE = 0x10,	/* FW_SIZE outside [header, VNPU_FW_MAX_SIZE] */
	VNPU_BOOT_ERR_DMA = 0x11,	/* image could not be read */
	VNPU_BOOT_ERR_MAGIC = 0x12,
	VNPU_BOOT_ERR_VERSION = 0x13,	/* ABI major differs or minor newer */
	VNPU_BOOT_ERR_HEADER = 0x14,	/* header CRC, header size or sizes wrong */
	VNPU_BOOT_ERR_CHECKSUM = 0x15,	/* payload CRC wrong */
	VNPU_BOOT_ERR_MANIFEST = 0x16,	/* kernel manifest names an unknown kernel */
	VNPU_BOOT_ERR_STATE = 0x17,	/* BOOT written while already READY */
};

/* FATAL_CODE register: why STATUS.FATAL is set. Only reset clears it. */
enum vnpu_fatal_code {
	VNPU_FATAL_NONE = 0,
	VNPU_FATAL_INJECTED = 1,	/* TEST_INJECT or TEST_INJECT command */
	VNPU_FATAL_RING_DMA = 2,	/* command fetch from a ring failed */
	VNPU_FATAL_CPL_DMA = 3,		/* completion record write failed */
};

/* ERR_CODE register: detail for EVENT_DOORBELL_ERROR / EVENT_QUEUE_ERROR. */
enum vnpu_err_code {
	VNPU_ERR_NONE = 0,
	VNPU_ERR_DOORBELL_RANGE = 1,	/* tail >= ring entries */
	VNPU_ERR_DOORBELL_DISABLED = 2,	/* doorbell of a disabled queue */
	VNPU_ERR_QUEUE_CONFIG = 3,	/* enable with bad ring/ctx config */
	VNPU_ERR_NOT_READY = 4,		/* queue enabled before boot */
	VNPU_ERR_BAD_REGISTER = 5,	/* write to an invalid/read-only register */
};

/* What a BOOT_STATUS value says, for messages of the driver and runtime. */
static inline const char *vnpu_boot_status_name(uint32_t status)
{
	switch (status) {
	case VNPU_BOOT_OFF:
		return "no answer (OFF)";
	case VNPU_BOOT_READY:
		return "READY";
	case VNPU_BOOT_ERR_SIZE:
		return "image size rejected (ERR_SIZE)";
	case VNPU_BOOT_ERR_DMA:
		return "image not readable (ERR_DMA)";
	case VNPU_BOOT_ERR_MAGIC:
		return "bad magic (ERR_MAGIC)";
	case VNPU_BOOT_ERR_VERSION:
		return "ABI version mismatch (ERR_VERSION)";
	case VNPU_BOOT_ERR_HEADER:
		return "bad header (ERR_HEADER)";
	case VNPU_BOOT_ERR_CHECKSUM:
		return "payload CRC (ERR_CHECKSUM)";
	case VNPU_BOOT_ERR_MANIFEST:
		return "kernel manifest (ERR_MANIFEST)";
	case VNPU_BOOT_ERR_STATE:
		return "already booted (ERR_STATE)";
	default:
		return "unknown status";
	}
}

#endif /* VNPU_HW_STATUS_H */
