// SPDX-License-Identifier: MIT
/* Firmware boot handshake: a good image, every boot error in check order,
 * booting twice, retry after failure, and the manifest gating launches. */
#include <stdio.h>

#include "fw_image.h"
#include "fwtest.h"

struct image {
	uint8_t bytes[4096];
	size_t size;
};

static struct image good_image(void)
{
	struct image im;

	ck_assert_int_eq(vnpu_fw_image_build(im.bytes, sizeof(im.bytes),
					     0x00020003, "test", &im.size),
			 0);
	return im;
}

static struct vnpu_fw_header *hdr(struct image *im)
{
	return (struct vnpu_fw_header *)im->bytes;
}

static struct vnpu_fw_kernel *entry(struct image *im, unsigned i)
{
	return (struct vnpu_fw_kernel *)(im->bytes +
					 sizeof(struct vnpu_fw_header)) +
	       i;
}

/* Recomputes only the header CRC (leaves a stale payload CRC). */
static void seal_header(struct image *im)
{
	hdr(im)->header_crc = 0;
	hdr(im)->header_crc =
		vnpu_fw_crc32(0, im->bytes, sizeof(struct vnpu_fw_header));
}

static uint32_t boot(struct vnpu_simhost *h, struct image *im)
{
	return vnpu_simhost_boot_image(h, im->bytes, im->size,
				       (uint32_t)im->size);
}

START_TEST(crc_is_zlib_crc32)
{
	ck_assert_uint_eq(vnpu_fw_crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(
		vnpu_fw_crc32(vnpu_fw_crc32(0, "1234", 4), "56789", 5),
		0xcbf43926u);
	ck_assert_uint_eq(vnpu_fw_crc32(0, "", 0), 0);
}
END_TEST

START_TEST(good_image_boots)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();

	/* Every kernel of the library is in the manifest. */
	ck_assert_uint_ge(hdr(&im)->num_kernels, 4);
	ck_assert_uint_eq(im.size, 64 + 32 * hdr(&im)->num_kernels);
	ck_assert_uint_eq(boot(h, &im), VNPU_BOOT_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_VERSION), 0x00020003);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_BOOT_DONE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_EVENTS);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, VNPU_MSIX_VECTOR_EVENTS),
			  1);
	vnpu_simhost_destroy(h);
}
END_TEST

/* Each case makes exactly one check fail; BOOT_STATUS names it. */
static void expect_boot_error(void (*edit)(struct image *), uint32_t want)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();

	edit(&im);
	ck_assert_uint_eq(boot(h, &im), want);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_VERSION), 0);
	ck_assert(ft_rd(h, VNPU_REG_EVENT_STATUS) & VNPU_EVENT_BOOT_DONE);
	/* A queue cannot be enabled on a device that did not boot. */
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_ne(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_NOT_READY);
	ck_assert(ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_CONFIG_ERROR);
	/* A retry with a good image works. */
	im = good_image();
	ck_assert_uint_eq(boot(h, &im), VNPU_BOOT_READY);
	vnpu_simhost_destroy(h);
}

static void bad_magic(struct image *im)
{
	hdr(im)->magic ^= 1;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void bad_major(struct image *im)
{
	hdr(im)->abi_major = 2;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void old_major(struct image *im)
{
	hdr(im)->abi_major = 0;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void newer_minor(struct image *im)
{
	hdr(im)->abi_minor = VNPU_HW_ABI_MINOR + 1;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void bad_header_crc(struct image *im)
{
	hdr(im)->header_crc ^= 0x100;
}

static void bad_header_size(struct image *im)
{
	hdr(im)->header_size = 60;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void bad_payload_size(struct image *im)
{
	hdr(im)->payload_size += 32;
	seal_header(im);
}

static void bad_num_kernels(struct image *im)
{
	hdr(im)->num_kernels = 0x40000001; /* *32 overflows 32 bits */
	hdr(im)->payload_size = 32;
	seal_header(im);
}

static void extra_bytes(struct image *im)
{
	im->bytes[im->size++] = 0;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void bad_payload_crc(struct image *im)
{
	entry(im, 0)->name[20] ^= 1;
}

static void unknown_kernel(struct image *im)
{
	entry(im, 0)->kernel_id = 99;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void kernel_id_zero(struct image *im)
{
	entry(im, 0)->kernel_id = 0;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void name_mismatch(struct image *im)
{
	entry(im, 0)->name[0] ^= 0x20;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void name_unterminated(struct image *im)
{
	memset(entry(im, 0)->name, 'a', VNPU_FW_NAME_LEN);
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void flags_set(struct image *im)
{
	entry(im, 1)->flags = 1;
	vnpu_fw_image_seal(im->bytes, im->size);
}

static void duplicate(struct image *im)
{
	*entry(im, 1) = *entry(im, 0);
	vnpu_fw_image_seal(im->bytes, im->size);
}

START_TEST(boot_errors_in_order)
{
	expect_boot_error(bad_magic, VNPU_BOOT_ERR_MAGIC);
	expect_boot_error(bad_major, VNPU_BOOT_ERR_VERSION);
	expect_boot_error(old_major, VNPU_BOOT_ERR_VERSION);
	expect_boot_error(newer_minor, VNPU_BOOT_ERR_VERSION);
	expect_boot_error(bad_header_crc, VNPU_BOOT_ERR_HEADER);
	expect_boot_error(bad_header_size, VNPU_BOOT_ERR_HEADER);
	expect_boot_error(bad_payload_size, VNPU_BOOT_ERR_HEADER);
	expect_boot_error(bad_num_kernels, VNPU_BOOT_ERR_HEADER);
	expect_boot_error(extra_bytes, VNPU_BOOT_ERR_HEADER);
	expect_boot_error(bad_payload_crc, VNPU_BOOT_ERR_CHECKSUM);
	expect_boot_error(unknown_kernel, VNPU_BOOT_ERR_MANIFEST);
	expect_boot_error(kernel_id_zero, VNPU_BOOT_ERR_MANIFEST);
	expect_boot_error(name_mismatch, VNPU_BOOT_ERR_MANIFEST);
	expect_boot_error(name_unterminated, VNPU_BOOT_ERR_MANIFEST);
	expect_boot_error(flags_set, VNPU_BOOT_ERR_MANIFEST);
	expect_boot_error(duplicate, VNPU_BOOT_ERR_MANIFEST);
}
END_TEST

START_TEST(bad_size_and_dma)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();
	uint64_t bus = vnpu_simhost_host_alloc(h, im.size, 4096);

	memcpy(vnpu_simhost_host_ptr(h, bus, im.size), im.bytes, im.size);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, bus, 0), VNPU_BOOT_ERR_SIZE);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, bus, 63), VNPU_BOOT_ERR_SIZE);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, bus, VNPU_FW_MAX_SIZE + 1),
			  VNPU_BOOT_ERR_SIZE);
	/* Sizes are checked before DMA: a bad address with a bad size. */
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, vnpu_simhost_hole(h), 10),
			  VNPU_BOOT_ERR_SIZE);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, vnpu_simhost_hole(h),
					       (uint32_t)im.size),
			  VNPU_BOOT_ERR_DMA);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, 0xfffffffffffff000ull,
					       (uint32_t)im.size),
			  VNPU_BOOT_ERR_DMA);
	/* FW_SIZE larger than header + payload. */
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, bus, VNPU_FW_MAX_SIZE),
			  VNPU_BOOT_ERR_HEADER);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(vnpu_simhost_boot_at(h, bus, (uint32_t)im.size),
			  VNPU_BOOT_READY);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(boot_twice)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	unsigned events = vnpu_simhost_irq_count(h, 0);

	ft_wr(h, VNPU_REG_EVENT_STATUS, 0xffffffff);
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	vnpu_sim_run(h->sim, 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_ERR_STATE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_BOOT_DONE);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events + 1);
	/* The running firmware is not disturbed. */
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(boot_is_done_by_the_device)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();
	uint64_t bus = vnpu_simhost_host_alloc(h, im.size, 4096);

	memcpy(vnpu_simhost_host_ptr(h, bus, im.size), im.bytes, im.size);
	ft_wr(h, VNPU_REG_FW_ADDR_LO, (uint32_t)bus);
	ft_wr(h, VNPU_REG_FW_ADDR_HI, (uint32_t)(bus >> 32));
	ft_wr(h, VNPU_REG_FW_SIZE, (uint32_t)im.size);
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	/* Pending until the device runs: BUSY, not READY yet. */
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_BUSY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_OFF);
	ck_assert(!vnpu_sim_idle(h->sim));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_READY);
	ck_assert(vnpu_sim_idle(h->sim));
	vnpu_simhost_destroy(h);
}
END_TEST

/* Only manifest kernels can be launched. */
START_TEST(manifest_gates_launch)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();
	struct vnpu_kp_fill fill;
	struct vnpu_kp_cast cast;
	struct vnpu_kargs_buffer kb;
	int64_t n = 16;
	uint64_t va;
	float *out;
	unsigned fill_at = 99;

	for (unsigned i = 0; i < hdr(&im)->num_kernels; i++)
		if (entry(&im, i)->kernel_id == VNPU_KERNEL_FILL)
			fill_at = i;
	ck_assert_uint_ne(fill_at, 99);
	*entry(&im, 0) = *entry(&im, fill_at);
	hdr(&im)->num_kernels = 1;
	hdr(&im)->payload_size = 32;
	im.size = 96;
	vnpu_fw_image_seal(im.bytes, im.size);
	ck_assert_uint_eq(boot(h, &im), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	out = vnpu_simhost_alloc_map(h, 0, true, 64, RW, &va);
	kb = ft_kbuf(va, 64, VNPU_ACCESS_READ | VNPU_ACCESS_WRITE);

	memset(&fill, 0, sizeof(fill));
	fill.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	fill.value = 2.5;
	ck_assert_uint_eq(vnpu_simhost_launch(h, 0, VNPU_KERNEL_FILL, 1, &kb, 1,
					      &fill, sizeof(fill), NULL),
			  VNPU_STATUS_OK);
	ck_assert(out[15] == 2.5f);
	memset(&cast, 0, sizeof(cast));
	cast.src = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	cast.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	ck_assert_uint_eq(vnpu_simhost_launch(h, 0, VNPU_KERNEL_CAST, 1, &kb, 1,
					      &cast, sizeof(cast), NULL),
			  VNPU_STATUS_UNKNOWN_KERNEL);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(empty_manifest_boots)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im = good_image();

	hdr(&im)->num_kernels = 0;
	hdr(&im)->payload_size = 0;
	im.size = 64;
	vnpu_fw_image_seal(im.bytes, im.size);
	ck_assert_uint_eq(boot(h, &im), VNPU_BOOT_READY);
	vnpu_simhost_destroy(h);
}
END_TEST

/* tools/vnpu-mkfw's image (built with the tree, path in VNPU_FW) is the
 * library's image and boots. */
START_TEST(mkfw_image_boots)
{
	const char *path = getenv("VNPU_FW");
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	struct image im, ref;
	FILE *f;

	ck_assert_ptr_nonnull(path);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	im.size = fread(im.bytes, 1, sizeof(im.bytes), f);
	fclose(f);
	ck_assert_int_eq(vnpu_fw_image_build(ref.bytes, sizeof(ref.bytes),
					     0x10000, hdr(&im)->build_id,
					     &ref.size),
			 0);
	ck_assert_uint_eq(im.size, ref.size);
	ck_assert_mem_eq(im.bytes, ref.bytes, im.size);
	ck_assert_uint_eq(boot(h, &im), VNPU_BOOT_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_VERSION), 0x10000);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(threaded_boot)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_THREADS, true);

	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	vnpu_simhost_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-boot");
	TCase *tc = tcase_create("boot");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, crc_is_zlib_crc32);
	tcase_add_test(tc, good_image_boots);
	tcase_add_test(tc, boot_errors_in_order);
	tcase_add_test(tc, bad_size_and_dma);
	tcase_add_test(tc, boot_twice);
	tcase_add_test(tc, boot_is_done_by_the_device);
	tcase_add_test(tc, manifest_gates_launch);
	tcase_add_test(tc, empty_manifest_boots);
	tcase_add_test(tc, mkfw_image_boots);
	tcase_add_test(tc, threaded_boot);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
