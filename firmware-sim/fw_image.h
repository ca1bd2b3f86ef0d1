/* SPDX-License-Identifier: MIT */
/*
 * Firmware images (include/vnpu/hw_fw.h): the CRC-32 the device checks and
 * a builder that makes an image listing every kernel of the kernel library.
 * Shared by the simulator's boot check, tools/vnpu-mkfw and the tests.
 */
#ifndef VNPU_FW_IMAGE_H
#define VNPU_FW_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32/ISO-HDLC (zlib's crc32()): start with crc = 0, feed the previous
 * result to continue. */
uint32_t vnpu_fw_crc32(uint32_t crc, const void *buf, size_t len);

/* Bytes of the image vnpu_fw_image_build() makes. */
size_t vnpu_fw_image_size(void);

/* Writes the header and a manifest of every kernel the library has, sealed
 * (both CRCs). build_id may be NULL; it is truncated to fit. Returns 0,
 * -ENOSPC when cap is too small, or -EINVAL. */
int vnpu_fw_image_build(void *buf, size_t cap, uint32_t fw_version,
			const char *build_id, size_t *size);

/* Recomputes payload_crc over the `size - header` payload bytes and then
 * header_crc, after a caller edited the image. size >= header size. */
void vnpu_fw_image_seal(void *image, size_t size);

#endif /* VNPU_FW_IMAGE_H */
