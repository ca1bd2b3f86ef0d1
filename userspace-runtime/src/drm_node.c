// SPDX-License-Identifier: MIT
/* The vnpu accel nodes (drm_node.h). */
#include "drm_node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xf86drm.h>

int vnpurt_drm_node_open(int minor)
{
	char path[64];
	drmVersionPtr v;
	int fd;

	snprintf(path, sizeof(path), "/dev/accel/accel%d", minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	v = drmGetVersion(fd);
	if (!v || !v->name || strcmp(v->name, "vnpu")) {
		drmFreeVersion(v);
		close(fd);
		errno = ENODEV;
		return -1;
	}
	drmFreeVersion(v);
	return fd;
}

static int minor_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int vnpurt_drm_node_minors(int *minors, int max)
{
	DIR *dir = opendir("/dev/accel");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return 0;
	while ((e = readdir(dir)) && n < max) {
		char *end;
		long m;

		if (strncmp(e->d_name, "accel", 5))
			continue;
		m = strtol(e->d_name + 5, &end, 10);
		if (end != e->d_name + 5 && !*end && m >= 0 && m < INT_MAX)
			minors[n++] = (int)m;
	}
	closedir(dir);
	qsort(minors, (size_t)n, sizeof(*minors), minor_cmp);
	return n;
}
