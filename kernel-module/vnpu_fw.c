// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: firmware image and boot handshake
 * (docs/hw-spec.md section 9). The driver checks the header itself to give
 * a clear message; the device checks it again (and the CRCs) at boot.
 */
#include <linux/crc32.h>
#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/iopoll.h>
#include <drm/drm_drv.h>

#include "vnpu_hw.h"

#define VNPU_BOOT_TIMEOUT_US (5 * USEC_PER_SEC)

static int vnpu_fw_check(struct vnpu_device *vdev, const struct firmware *fw)
{
	struct device *dev = vdev->drm.dev;
	const struct vnpu_fw_header *h = (const void *)fw->data;
	u32 dev_major = vdev->hw_version >> 16;
	u32 dev_minor = vdev->hw_version & 0xffff;
	u64 expect;

	if (fw->size < sizeof(*h) || fw->size > VNPU_FW_MAX_SIZE) {
		dev_err(dev, "%s: size %zu outside 64 .. %u bytes\n",
			VNPU_FW_NAME, fw->size, VNPU_FW_MAX_SIZE);
		return -EINVAL;
	}
	if (le32_to_cpu(h->magic) != VNPU_FW_MAGIC) {
		dev_err(dev, "%s: bad magic %#x, not a vnpu firmware image\n",
			VNPU_FW_NAME, le32_to_cpu(h->magic));
		return -EINVAL;
	}
	if (le16_to_cpu(h->abi_major) != dev_major ||
	    le16_to_cpu(h->abi_minor) > dev_minor) {
		dev_err(dev,
			"%s is for hardware ABI %u.%u, the device is %u.%u\n",
			VNPU_FW_NAME, le16_to_cpu(h->abi_major),
			le16_to_cpu(h->abi_minor), dev_major, dev_minor);
		return -EINVAL;
	}
	expect = sizeof(*h) + (u64)le32_to_cpu(h->num_kernels) *
				      sizeof(struct vnpu_fw_kernel);
	if (le32_to_cpu(h->header_size) != sizeof(*h) ||
	    le32_to_cpu(h->payload_size) + (u64)sizeof(*h) != fw->size ||
	    expect != fw->size) {
		dev_err(dev, "%s: inconsistent header sizes (file %zu bytes)\n",
			VNPU_FW_NAME, fw->size);
		return -EINVAL;
	}
	if (crc32_le(~0u, fw->data + sizeof(*h), fw->size - sizeof(*h)) !=
	    ~le32_to_cpu(h->payload_crc)) {
		dev_err(dev, "%s: payload CRC mismatch, the file is damaged\n",
			VNPU_FW_NAME);
		return -EINVAL;
	}
	return 0;
}

int vnpu_fw_load(struct vnpu_device *vdev)
{
	struct device *dev = vdev->drm.dev;
	const struct vnpu_fw_header *h;
	const struct firmware *fw;
	int ret;

	ret = request_firmware(&fw, VNPU_FW_NAME, dev);
	if (ret) {
		dev_err(dev, "cannot load firmware %s: %d\n", VNPU_FW_NAME,
			ret);
		return ret;
	}
	ret = vnpu_fw_check(vdev, fw);
	if (ret)
		goto out;
	vdev->fw_cpu =
		dma_alloc_coherent(dev, fw->size, &vdev->fw_dma, GFP_KERNEL);
	if (!vdev->fw_cpu) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(vdev->fw_cpu, fw->data, fw->size);
	vdev->fw_size = fw->size;
	h = vdev->fw_cpu;
	dev_info(dev,
		 "%s: version %#x, ABI %u.%u, %u kernels, build \"%.*s\"\n",
		 VNPU_FW_NAME, le32_to_cpu(h->fw_version),
		 le16_to_cpu(h->abi_major), le16_to_cpu(h->abi_minor),
		 le32_to_cpu(h->num_kernels), VNPU_FW_BUILD_LEN, h->build_id);
out:
	release_firmware(fw);
	return ret;
}

void vnpu_fw_fini(struct vnpu_device *vdev)
{
	if (vdev->fw_cpu)
		dma_free_coherent(vdev->drm.dev, vdev->fw_size, vdev->fw_cpu,
				  vdev->fw_dma);
	vdev->fw_cpu = NULL;
}

/* Boots the kept image on a reset device and waits for BOOT_DONE. */
int vnpu_fw_boot(struct vnpu_device *vdev)
{
	u32 ev, status;
	int ret;

	vnpu_wr(vdev, VNPU_REG_EVENT_STATUS, VNPU_EVENT_BOOT_DONE);
	vnpu_wr(vdev, VNPU_REG_FW_ADDR_LO, lower_32_bits(vdev->fw_dma));
	vnpu_wr(vdev, VNPU_REG_FW_ADDR_HI, upper_32_bits(vdev->fw_dma));
	vnpu_wr(vdev, VNPU_REG_FW_SIZE, vdev->fw_size);
	vnpu_wr(vdev, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	ret = readl_poll_timeout(vdev->regs + VNPU_REG_EVENT_STATUS, ev,
				 ev & VNPU_EVENT_BOOT_DONE, 100,
				 VNPU_BOOT_TIMEOUT_US);
	status = vnpu_rd(vdev, VNPU_REG_BOOT_STATUS);
	vnpu_wr(vdev, VNPU_REG_EVENT_STATUS, VNPU_EVENT_BOOT_DONE);
	if (ret) {
		vnpu_log(vdev, "boot: no BOOT_DONE within %u ms", 5000);
		return -ETIMEDOUT;
	}
	if (status != VNPU_BOOT_READY) {
		vnpu_log(vdev, "boot failed: BOOT_STATUS %#x, %s", status,
			 vnpu_boot_status_name(status));
		return status == VNPU_BOOT_ERR_VERSION ? -ENOEXEC : -EIO;
	}
	vdev->fw_version = vnpu_rd(vdev, VNPU_REG_FW_VERSION);
	vnpu_log(vdev, "boot: READY, firmware version %#x", vdev->fw_version);
	return 0;
}
