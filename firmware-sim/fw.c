// SPDX-License-Identifier: MIT
/* Firmware image verification at boot, in the order of enum
 * vnpu_boot_status: magic, version, header, payload checksum, manifest. */
#include <string.h>

#include "fw_image.h"
#include "sim_internal.h"

static uint32_t check_manifest(struct vnpu_sim *sim, const uint8_t *payload,
			       uint32_t num_kernels,
			       bool loaded[VNPU_KERNEL_ID_MAX + 1])
{
	for (uint32_t i = 0; i < num_kernels; i++) {
		const struct vnpu_kernel_def *k;
		struct vnpu_fw_kernel e;

		memcpy(&e, payload + (size_t)i * sizeof(e), sizeof(e));
		k = vnpu_kernel_find(e.kernel_id);
		if (e.flags || !k || e.kernel_id > VNPU_KERNEL_ID_MAX ||
		    !memchr(e.name, 0, sizeof(e.name)) ||
		    strcmp(e.name, k->name) || loaded[e.kernel_id]) {
			sim_log(sim,
				"vnpu: firmware manifest entry %u "
				"(kernel %u) rejected",
				i, e.kernel_id);
			return VNPU_BOOT_ERR_MANIFEST;
		}
		loaded[e.kernel_id] = true;
	}
	return VNPU_BOOT_READY;
}

uint32_t sim_fw_verify(struct vnpu_sim *sim, const uint8_t *image,
		       uint32_t size, uint32_t *fw_version,
		       bool loaded[VNPU_KERNEL_ID_MAX + 1])
{
	struct vnpu_fw_header hdr;
	uint32_t crc;

	memcpy(&hdr, image, sizeof(hdr));
	if (hdr.magic != VNPU_FW_MAGIC)
		return VNPU_BOOT_ERR_MAGIC;
	if (hdr.abi_major != VNPU_HW_ABI_MAJOR ||
	    hdr.abi_minor > VNPU_HW_ABI_MINOR) {
		sim_log(sim, "vnpu: firmware ABI %u.%u, device supports %u.%u",
			hdr.abi_major, hdr.abi_minor, VNPU_HW_ABI_MAJOR,
			VNPU_HW_ABI_MINOR);
		return VNPU_BOOT_ERR_VERSION;
	}
	crc = hdr.header_crc;
	hdr.header_crc = 0;
	if (hdr.header_size != sizeof(hdr) ||
	    vnpu_fw_crc32(0, &hdr, sizeof(hdr)) != crc ||
	    hdr.num_kernels >
		    VNPU_FW_MAX_SIZE / sizeof(struct vnpu_fw_kernel) ||
	    hdr.payload_size !=
		    hdr.num_kernels * sizeof(struct vnpu_fw_kernel) ||
	    hdr.payload_size != size - sizeof(hdr))
		return VNPU_BOOT_ERR_HEADER;
	if (vnpu_fw_crc32(0, image + sizeof(hdr), hdr.payload_size) !=
	    hdr.payload_crc)
		return VNPU_BOOT_ERR_CHECKSUM;
	*fw_version = hdr.fw_version;
	return check_manifest(sim, image + sizeof(hdr), hdr.num_kernels,
			      loaded);
}
