/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: firmware image format and boot handshake.
 *
 * The image is a 64-byte header followed by the payload, a manifest of the
 * kernels the firmware provides. The driver places the image in host memory,
 * writes FW_ADDR_LO/HI and FW_SIZE, then CTRL.BOOT. The device reads and
 * checks the image and sets BOOT_STATUS (READY or the first check that
 * failed, in the order of enum vnpu_boot_status), then raises
 * EVENT_BOOT_DONE. CRCs are CRC-32/ISO-HDLC (the zlib polynomial).
 */
#ifndef VNPU_HW_FW_H
#define VNPU_HW_FW_H

#include "hw_types.h"

#define VNPU_FW_MAGIC		0x57464e56u	/* "VNFW" */
#define VNPU_FW_MAX_SIZE	(1u << 20)
#define VNPU_FW_NAME_LEN	24
#define VNPU_FW_BUILD_LEN	32

struct vnpu_fw_header {
	uint32_t magic;		/* VNPU_FW_MAGIC */
	uint16_t abi_major;	/* must equal the device's major */
	uint16_t abi_minor;	/* must be <= the device's minor */
	uint32_t header_size;	/* sizeof(struct vnpu_fw_header) */
	uint32_t fw_version;	/* reported in FW_VERSION */
	uint32_t payload_size;	/* num_kernels * sizeof(struct vnpu_fw_kernel) */
	uint32_t payload_crc;	/* CRC-32 of the payload */
	uint32_t num_kernels;
	uint32_t header_crc;	/* CRC-32 of the header with this field zero */
	char build_id[VNPU_FW_BUILD_LEN]; /* NUL-padded text */
};

/* One manifest entry: the device enables the kernels the firmware lists. */
struct vnpu_fw_kernel {
	uint32_t kernel_id;	/* enum vnpu_kernel_id */
	uint32_t flags;		/* must be zero */
	char name[VNPU_FW_NAME_LEN]; /* NUL-terminated, matches the kernel's name */
};

VNPU_ASSERT_SIZE(struct vnpu_fw_header, 64);
VNPU_ASSERT_SIZE(struct vnpu_fw_kernel, 32);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, abi_major, 4);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, header_size, 8);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, fw_version, 12);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, payload_size, 16);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, payload_crc, 20);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, num_kernels, 24);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, header_crc, 28);
VNPU_ASSERT_OFFSET(struct vnpu_fw_header, build_id, 32);
VNPU_ASSERT_OFFSET(struct vnpu_fw_kernel, name, 8);

#endif /* VNPU_HW_FW_H */
