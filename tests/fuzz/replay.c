// SPDX-License-Identifier: MIT
/*
 * Replays fuzz inputs through LLVMFuzzerTestOneInput without libFuzzer, so
 * every build (gcc included) checks the committed corpus. Arguments are
 * files or directories (every regular file inside, sorted).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long size;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc(size ? (size_t)size : 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	unsigned files = 0;
	int errors = 0;

	for (int i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int n;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: no such path %s\n", argv[i]);
			errors++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			errors += replay_file(argv[i]) != 0;
			files++;
			continue;
		}
		n = scandir(argv[i], &names, NULL, by_name);
		for (int j = 0; j < n; j++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 names[j]->d_name);
			if (!stat(path, &st) && S_ISREG(st.st_mode)) {
				errors += replay_file(path) != 0;
				files++;
			}
			free(names[j]);
		}
		if (n >= 0)
			free(names);
	}
	printf("replayed %u inputs\n", files);
	return errors || files == 0 ? 1 : 0;
}
