// SPDX-License-Identifier: MIT
/* The runtime's environment variables, read once by vnpu_init(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* An unsigned decimal in [lo, hi], or the default when unset/empty. */
static vnpu_error_t env_uint(const char *name, uint64_t lo, uint64_t hi,
			     uint64_t def, uint64_t *out)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	*out = def;
	if (!v || !*v)
		return VNPU_SUCCESS;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || x < lo || x > hi)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "%s=\"%s\": expected an integer in %llu..%llu",
			       name, v, (unsigned long long)lo,
			       (unsigned long long)hi);
	*out = x;
	return VNPU_SUCCESS;
}

vnpu_error_t rt_config_read(struct vnpurt_config *cfg)
{
	const char *backend = getenv("VNPU_BACKEND");
	const char *trace = getenv("VNPU_TRACE");
	uint64_t v;
	vnpu_error_t err;

	memset(cfg, 0, sizeof(*cfg));
	if (backend && *backend) {
		if (strcmp(backend, "sim") && strcmp(backend, "drm"))
			return rt_fail(VNPU_ERROR_INVALID_VALUE,
				       "VNPU_BACKEND=\"%s\": expected sim or drm",
				       backend);
		strcpy(cfg->backend, backend);
	}
	err = env_uint("VNPU_LAUNCH_BLOCKING", 0, 1, 0, &v);
	if (err)
		return err;
	cfg->launch_blocking = v;
	err = env_uint("VNPU_SIM_VRAM_MB", 16, 65536, 1024, &v);
	if (err)
		return err;
	cfg->sim_vram_bytes = v << 20;
	err = env_uint("VNPU_SIM_TEST_MODE", 0, 1, 0, &v);
	if (err)
		return err;
	cfg->sim_test_mode = v;
	err = env_uint("VNPU_SIM_TIMEOUT_MS", 10, 3600000, 10000, &v);
	if (err)
		return err;
	cfg->sim_timeout_ms = (unsigned)v;
	err = env_uint("VNPU_SIM_CORES", 0, 64, 0, &v);
	if (err)
		return err;
	cfg->sim_cores = (unsigned)v;
	/* A thread's wake-up costs more than most commands take: spin that
	 * long first, where another CPU runs the device. */
	err = env_uint("VNPU_SIM_SPIN_US", 0, 10000,
		       sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 20 : 0, &v);
	if (err)
		return err;
	cfg->sim_spin_us = (unsigned)v;
	if (trace && *trace) {
		cfg->trace_path = strdup(trace);
		if (!cfg->trace_path)
			return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				       "copying VNPU_TRACE");
	}
	return VNPU_SUCCESS;
}

void rt_config_free(struct vnpurt_config *cfg)
{
	free(cfg->trace_path);
	cfg->trace_path = NULL;
}
