// SPDX-License-Identifier: MIT
/* Firmware image CRC, builder and sealing (see fw_image.h). */
#include <errno.h>
#include <string.h>

#include "fw_image.h"
#include "kernel.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_regs.h"

uint32_t vnpu_fw_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* Reflected polynomial 0xedb88320, four bits at a time. */
	static const uint32_t nibble[16] = {
		0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac,
		0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
		0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
		0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
	};
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		c = (c >> 4) ^ nibble[c & 15];
		c = (c >> 4) ^ nibble[c & 15];
	}
	return ~c;
}

static size_t kernels_present(void)
{
	size_t n = 0;

	for (size_t i = 0; i < vnpu_kernel_count(); i++)
		if (vnpu_kernel_at(i))
			n++;
	return n;
}

size_t vnpu_fw_image_size(void)
{
	return sizeof(struct vnpu_fw_header) +
	       kernels_present() * sizeof(struct vnpu_fw_kernel);
}

void vnpu_fw_image_seal(void *image, size_t size)
{
	struct vnpu_fw_header hdr;
	uint8_t *bytes = image;

	memcpy(&hdr, bytes, sizeof(hdr));
	hdr.payload_crc =
		vnpu_fw_crc32(0, bytes + sizeof(hdr), size - sizeof(hdr));
	hdr.header_crc = 0;
	hdr.header_crc = vnpu_fw_crc32(0, &hdr, sizeof(hdr));
	memcpy(bytes, &hdr, sizeof(hdr));
}

int vnpu_fw_image_build(void *buf, size_t cap, uint32_t fw_version,
			const char *build_id, size_t *size)
{
	size_t need = vnpu_fw_image_size();
	struct vnpu_fw_header hdr;
	uint8_t *out = buf;
	size_t n = 0;

	if (!buf || !size)
		return -EINVAL;
	if (cap < need)
		return -ENOSPC;
	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = VNPU_FW_MAGIC;
	hdr.abi_major = VNPU_HW_ABI_MAJOR;
	hdr.abi_minor = VNPU_HW_ABI_MINOR;
	hdr.header_size = sizeof(hdr);
	hdr.fw_version = fw_version;
	hdr.num_kernels = (uint32_t)kernels_present();
	hdr.payload_size = hdr.num_kernels * sizeof(struct vnpu_fw_kernel);
	if (build_id)
		strncpy(hdr.build_id, build_id, sizeof(hdr.build_id) - 1);
	memcpy(out, &hdr, sizeof(hdr));
	for (size_t i = 0; i < vnpu_kernel_count(); i++) {
		const struct vnpu_kernel_def *k = vnpu_kernel_at(i);
		struct vnpu_fw_kernel e;

		if (!k)
			continue;
		memset(&e, 0, sizeof(e));
		e.kernel_id = k->id;
		strncpy(e.name, k->name, sizeof(e.name) - 1);
		memcpy(out + sizeof(hdr) + n * sizeof(e), &e, sizeof(e));
		n++;
	}
	vnpu_fw_image_seal(out, need);
	*size = need;
	return 0;
}
