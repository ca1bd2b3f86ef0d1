// SPDX-License-Identifier: MIT
/*
 * vnpu-smi: the state of the vnpu devices, like nvidia-smi / npu-smi.
 *
 *   vnpu-smi [--backend auto|drm|sim] [--json] [--contexts]
 *
 * drm: every /dev/accel/accelN whose driver is "vnpu", asked through
 * GET_PARAM (device-wide figures for root, i.e. CAP_SYS_ADMIN; anyone else
 * gets its own user's and file's, docs/uapi.md "Usage counters"; vnpu-smi's
 * own open file is one of the open contexts and is not counted), plus the
 * driver's debugfs files (/sys/kernel/debug/accel/N/contexts) when
 * readable (root).
 * sim: the simulator the runtime runs in-process, that is a device that
 * lives as long as this program: its properties, memory and reset count.
 * auto: drm when a vnpu node exists, else sim.
 *
 * Exit status: 0, 1 when no device could be read, 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xf86drm.h>

#include "drm_node.h"
#include "uapi/drm/vnpu_accel.h"
#include "vnpu_runtime.h"
#include "vnpurt_testing.h"

#define SMI_MAX_DEVICES 16
#define SMI_MAX_CONTEXTS 64

struct smi_context {
	unsigned id;
	bool faulted, banned;
	unsigned faults;
};

struct smi_device {
	char node[32];	/* "accel0", or "sim" */
	char name[64];
	char backend[8];
	uint32_t pci_id; /* vendor << 16 | device; 0 unknown */
	uint32_t hw_version, fw_version;
	char fw_build[32];
	uint32_t cores, hw_queues;
	uint64_t vram_used, vram_total;
	uint32_t user_queues;	 /* driver queues of all clients */
	uint32_t contexts;	 /* clients with the device open */
	uint32_t contexts_max;
	uint32_t resets;
	uint64_t job_errors;	 /* failed jobs since the driver loaded */
	bool test_mode;
	/* debugfs, when readable */
	bool have_ctx;
	unsigned nctx;
	struct smi_context ctx[SMI_MAX_CONTEXTS];
};

static uint64_t param(int fd, uint32_t p, bool *ok)
{
	struct drm_vnpu_get_param gp = {.param = p};

	if (drmIoctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp)) {
		*ok = false;
		return 0;
	}
	return gp.value;
}

/* The driver's per-context lines: "ctx N: [faulted] [banned] faults F ...". */
static void read_debugfs_contexts(int minor, struct smi_device *d)
{
	char path[96], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%d/contexts",
		 minor);
	f = fopen(path, "r");
	if (!f)
		return;
	d->have_ctx = true;
	while (fgets(line, sizeof(line), f) && d->nctx < SMI_MAX_CONTEXTS) {
		struct smi_context *c = &d->ctx[d->nctx];
		const char *faults = strstr(line, "faults ");

		if (sscanf(line, "ctx %u:", &c->id) != 1)
			continue;
		c->faulted = strstr(line, " faulted") != NULL;
		c->banned = strstr(line, " banned") != NULL;
		c->faults = faults ? (unsigned)strtoul(faults + 7, NULL, 10) : 0;
		d->nctx++;
	}
	fclose(f);
}

static bool read_drm_device(int minor, struct smi_device *d)
{
	int fd = vnpurt_drm_node_open(minor);
	bool ok = true;
	uint64_t open_files;

	if (fd < 0)
		return false;
	memset(d, 0, sizeof(*d));
	snprintf(d->node, sizeof(d->node), "accel%d", minor);
	snprintf(d->name, sizeof(d->name), "vnpu (drm accel%d)", minor);
	snprintf(d->backend, sizeof(d->backend), "drm");
	snprintf(d->fw_build, sizeof(d->fw_build), "vnpu/vnpu.fw");
	d->pci_id = (uint32_t)param(fd, DRM_VNPU_PARAM_DEVICE_ID, &ok);
	d->hw_version = (uint32_t)param(fd, DRM_VNPU_PARAM_HW_VERSION, &ok);
	d->fw_version = (uint32_t)param(fd, DRM_VNPU_PARAM_FW_VERSION, &ok);
	d->cores = (uint32_t)param(fd, DRM_VNPU_PARAM_NUM_CORES, &ok);
	d->hw_queues = (uint32_t)param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, &ok);
	d->vram_total = param(fd, DRM_VNPU_PARAM_VRAM_SIZE, &ok);
	d->vram_used = param(fd, DRM_VNPU_PARAM_VRAM_USED, &ok);
	d->user_queues = (uint32_t)param(fd, DRM_VNPU_PARAM_QUEUE_COUNT, &ok);
	open_files = param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS, &ok);
	/* Not counting this program's own open file. */
	d->contexts = open_files ? (uint32_t)open_files - 1 : 0;
	d->contexts_max = (uint32_t)param(fd, DRM_VNPU_PARAM_NUM_CONTEXTS, &ok);
	d->resets = (uint32_t)param(fd, DRM_VNPU_PARAM_RESET_COUNT, &ok);
	d->job_errors = param(fd, DRM_VNPU_PARAM_JOB_ERROR_COUNT, &ok);
	d->test_mode = param(fd, DRM_VNPU_PARAM_CAPABILITIES, &ok) &
		       DRM_VNPU_CAP_TEST_MODE;
	close(fd);
	if (!ok) {
		fprintf(stderr, "vnpu-smi: accel%d: GET_PARAM failed\n", minor);
		return false;
	}
	read_debugfs_contexts(minor, d);
	return true;
}

static int read_drm(struct smi_device *devs, int max)
{
	int minors[SMI_MAX_DEVICES], n = vnpurt_drm_node_minors(minors, SMI_MAX_DEVICES);
	int count = 0;

	for (int i = 0; i < n && count < max; i++)
		if (read_drm_device(minors[i], &devs[count]))
			count++;
	return count;
}

static int read_sim(struct smi_device *d)
{
	struct vnpu_device_props p;
	size_t free_b = 0, total = 0;
	uint32_t resets = 0;
	vnpu_error_t err;

	setenv("VNPU_BACKEND", "sim", 1);
	err = vnpu_init();
	if (!err)
		err = vnpu_device_properties(0, &p);
	if (!err)
		err = vnpu_mem_info(&free_b, &total);
	if (!err)
		err = vnpurt_test_reset_count(&resets);
	if (err) {
		fprintf(stderr, "vnpu-smi: sim: %s (%s)\n",
			vnpu_error_string(err), vnpu_last_error_detail());
		return 0;
	}
	memset(d, 0, sizeof(*d));
	snprintf(d->node, sizeof(d->node), "sim");
	snprintf(d->name, sizeof(d->name), "%s", p.name);
	snprintf(d->backend, sizeof(d->backend), "%s", p.backend);
	snprintf(d->fw_build, sizeof(d->fw_build), "%s", p.fw_build);
	d->hw_version = p.hw_version;
	d->fw_version = p.fw_version;
	d->cores = p.cores;
	d->hw_queues = p.queues;
	d->vram_total = total;
	d->vram_used = total - free_b;
	/* The in-process device serves this program only. */
	d->contexts = 0;
	d->contexts_max = 1;
	d->resets = resets;
	vnpu_finalize();
	return 1;
}

static void version_str(char *buf, size_t len, uint32_t v)
{
	snprintf(buf, len, "%u.%u", v >> 16, v & 0xffff);
}

static void mib_str(char *buf, size_t len, uint64_t used, uint64_t total)
{
	snprintf(buf, len, "%" PRIu64 " / %" PRIu64 " MiB", used >> 20,
		 total >> 20);
}

static void print_table(const struct smi_device *devs, int n, bool contexts)
{
	static const char rule[] =
		"+-----+--------------------+-------+----------+"
		"-------------------+-------+--------+----------+--------+"
		"--------+";

	printf("%s\n", rule);
	printf("| %-3s | %-18s | %-5s | %-8s | %-17s | %5s | %-6s | %-8s "
	       "| %6s | %6s |\n",
	       "Dev", "Name", "HW", "Firmware", "VRAM used / total", "Cores",
	       "Queues", "Contexts", "Resets", "Errors");
	printf("%s\n", rule);
	for (int i = 0; i < n; i++) {
		const struct smi_device *d = &devs[i];
		char hw[16], fw[16], mem[48], q[24], ctx[24];

		version_str(hw, sizeof(hw), d->hw_version);
		version_str(fw, sizeof(fw), d->fw_version);
		mib_str(mem, sizeof(mem), d->vram_used, d->vram_total);
		snprintf(q, sizeof(q), "%u/%u", d->user_queues, d->hw_queues);
		snprintf(ctx, sizeof(ctx), "%u/%u", d->contexts,
			 d->contexts_max);
		printf("| %3d | %-18.18s | %-5s | %-8s | %17s | %5u | %6s | "
		       "%8s | %6u | %6" PRIu64 " |\n",
		       i, d->name, hw, fw, mem, d->cores, q, ctx, d->resets,
		       d->job_errors);
	}
	printf("%s\n", rule);
	printf("Queues: user queues / hardware queues. Contexts: open by "
	       "other programs / maximum. Errors: failed jobs.\n");
	for (int i = 0; i < n; i++) {
		const struct smi_device *d = &devs[i];

		printf("Dev %d: backend %s, node %s, firmware build %s%s", i,
		       d->backend, d->node, d->fw_build,
		       d->test_mode ? ", test mode" : "");
		if (d->pci_id)
			printf(", PCI %04x:%04x", d->pci_id >> 16,
			       d->pci_id & 0xffff);
		printf("\n");
		if (!contexts)
			continue;
		if (!d->have_ctx) {
			printf("  contexts: %s\n",
			       strcmp(d->backend, "drm")
				       ? "none (in-process device)"
				       : "debugfs not readable (needs root)");
			continue;
		}
		for (unsigned c = 0; c < d->nctx; c++)
			printf("  context %u:%s%s faults %u\n", d->ctx[c].id,
			       d->ctx[c].faulted ? " faulted" : "",
			       d->ctx[c].banned ? " banned" : "",
			       d->ctx[c].faults);
	}
}

static void print_json(const struct smi_device *devs, int n)
{
	printf("{\"devices\": [");
	for (int i = 0; i < n; i++) {
		const struct smi_device *d = &devs[i];
		char hw[16], fw[16];

		version_str(hw, sizeof(hw), d->hw_version);
		version_str(fw, sizeof(fw), d->fw_version);
		printf("%s\n  {\"index\": %d, \"node\": \"%s\", \"name\": \"%s\", "
		       "\"backend\": \"%s\", \"hw_version\": \"%s\", "
		       "\"fw_version\": \"%s\", \"fw_build\": \"%s\", "
		       "\"cores\": %u, \"hw_queues\": %u, \"user_queues\": %u, "
		       "\"vram_used\": %" PRIu64 ", \"vram_total\": %" PRIu64
		       ", \"contexts\": %u, \"contexts_max\": %u, "
		       "\"resets\": %u, \"job_errors\": %" PRIu64
		       ", \"test_mode\": %s",
		       i ? "," : "", i, d->node, d->name, d->backend, hw, fw,
		       d->fw_build, d->cores, d->hw_queues, d->user_queues,
		       d->vram_used, d->vram_total, d->contexts,
		       d->contexts_max, d->resets, d->job_errors,
		       d->test_mode ? "true" : "false");
		if (d->have_ctx) {
			printf(", \"context_list\": [");
			for (unsigned c = 0; c < d->nctx; c++)
				printf("%s{\"id\": %u, \"faulted\": %s, "
				       "\"banned\": %s, \"faults\": %u}",
				       c ? ", " : "", d->ctx[c].id,
				       d->ctx[c].faulted ? "true" : "false",
				       d->ctx[c].banned ? "true" : "false",
				       d->ctx[c].faults);
			printf("]");
		}
		printf("}");
	}
	printf("\n]}\n");
}

static int usage(void)
{
	fprintf(stderr,
		"usage: vnpu-smi [--backend auto|drm|sim] [--json] "
		"[--contexts]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct smi_device devs[SMI_MAX_DEVICES];
	const char *backend = "auto";
	bool json = false, contexts = false;
	int n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--contexts"))
			contexts = true;
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else
			return usage();
	}
	if (strcmp(backend, "auto") && strcmp(backend, "drm") &&
	    strcmp(backend, "sim"))
		return usage();
	if (strcmp(backend, "sim"))
		n = read_drm(devs, SMI_MAX_DEVICES);
	if (!n && !strcmp(backend, "drm")) {
		fprintf(stderr, "vnpu-smi: no /dev/accel/accel* node with "
				"driver \"vnpu\" could be read\n");
		return 1;
	}
	if (!n)
		n = read_sim(devs);
	if (!n)
		return 1;
	if (json)
		print_json(devs, n);
	else
		print_table(devs, n, contexts);
	return 0;
}
