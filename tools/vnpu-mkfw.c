// SPDX-License-Identifier: MIT
/*
 * vnpu-mkfw: writes the firmware image (include/vnpu/hw_fw.h) listing every
 * kernel of the kernel library.
 *
 *   vnpu-mkfw -o vnpu.fw [--version N] [--build-id TEXT]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_image.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: vnpu-mkfw -o FILE [--version N] [--build-id TEXT]\n"
		   "  -o, --output FILE    image to write\n"
		   "  -v, --version N      FW_VERSION value (default 0x10000)\n"
		   "  -b, --build-id TEXT  build identifier (max 31 chars)\n");
}

static int parse_u32(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	return errno || !*s || *end || *out > 0xffffffffUL || s[0] == '-' ? -1
									  : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"version", required_argument, NULL, 'v'},
		{"build-id", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *output = NULL, *build_id = "vnpu";
	unsigned long version = 0x10000;
	size_t size = vnpu_fw_image_size(), got;
	unsigned char *image;
	FILE *f;
	int c;

	while ((c = getopt_long(argc, argv, "o:v:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'v':
			if (parse_u32(optarg, &version)) {
				fprintf(stderr, "vnpu-mkfw: bad version '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'b':
			if (strlen(optarg) > 31) {
				fprintf(stderr, "vnpu-mkfw: build id longer "
						"than 31 characters\n");
				return 2;
			}
			build_id = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!output || optind != argc) {
		usage(stderr);
		return 2;
	}
	image = malloc(size);
	if (!image || vnpu_fw_image_build(image, size, (uint32_t)version,
					  build_id, &got)) {
		fprintf(stderr, "vnpu-mkfw: cannot build the image\n");
		free(image);
		return 1;
	}
	f = fopen(output, "wb");
	if (!f || fwrite(image, 1, got, f) != got || fclose(f)) {
		fprintf(stderr, "vnpu-mkfw: cannot write %s: %s\n", output,
			strerror(errno));
		free(image);
		return 1;
	}
	free(image);
	return 0;
}
