// SPDX-License-Identifier: MIT
/*
 * vnpu-smi against the sim backend: the table and the JSON carry the
 * simulated device's properties as the environment configured them, and
 * usage errors exit 2. argv[1] is the vnpu-smi program.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vnpu/hw_regs.h"

static const char *smi;

/* Runs vnpu-smi with args; its stdout in out, its exit status returned. */
static int run(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	size_t len = 0, got;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>/dev/null", smi, args);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (len + 1 < cap && (got = fread(out + len, 1, cap - 1 - len, p)))
		len += got;
	out[len] = '\0';
	st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The value of "key": in a JSON object, as text up to , or }. */
static void json_field(const char *json, const char *key, char *val,
		       size_t cap)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	ck_assert_msg(p != NULL, "no field %s in %s", key, json);
	p += strlen(pat);
	while (p[n] && p[n] != ',' && p[n] != '}' && n + 1 < cap)
		n++;
	memcpy(val, p, n);
	val[n] = '\0';
}

START_TEST(json_has_the_sim_device)
{
	static char out[8192];
	char v[128], want[32];

	setenv("VNPU_SIM_VRAM_MB", "96", 1);
	setenv("VNPU_SIM_CORES", "3", 1);
	ck_assert_int_eq(run("--backend sim --json", out, sizeof(out)), 0);
	json_field(out, "backend", v, sizeof(v));
	ck_assert_str_eq(v, "\"sim\"");
	json_field(out, "name", v, sizeof(v));
	ck_assert_str_eq(v, "\"vnpu (sim)\"");
	json_field(out, "vram_total", v, sizeof(v));
	ck_assert_str_eq(v, "100663296");
	json_field(out, "vram_used", v, sizeof(v));
	ck_assert(strtoull(v, NULL, 10) <= 100663296ull);
	json_field(out, "cores", v, sizeof(v));
	ck_assert_str_eq(v, "3");
	json_field(out, "hw_version", v, sizeof(v));
	snprintf(want, sizeof(want), "\"%u.%u\"", VNPU_HW_ABI_MAJOR,
		 VNPU_HW_ABI_MINOR);
	ck_assert_str_eq(v, want);
	json_field(out, "fw_version", v, sizeof(v));
	ck_assert_str_eq(v, "\"1.0\"");
	json_field(out, "fw_build", v, sizeof(v));
	ck_assert_str_eq(v, "\"libvnpurt-sim\"");
	json_field(out, "hw_queues", v, sizeof(v));
	ck_assert_int_ge(atoi(v), 2);
	json_field(out, "resets", v, sizeof(v));
	ck_assert_str_eq(v, "0");
	json_field(out, "job_errors", v, sizeof(v));
	ck_assert_str_eq(v, "0");
	/* One device: one object. */
	ck_assert_ptr_null(strstr(strstr(out, "\"index\": 0") + 1, "\"index\""));
}
END_TEST

START_TEST(table_has_a_row_per_device)
{
	static char out[8192];
	const char *row;

	setenv("VNPU_SIM_VRAM_MB", "64", 1);
	setenv("VNPU_SIM_CORES", "2", 1);
	ck_assert_int_eq(run("--backend sim --contexts", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "| Dev | Name"));
	ck_assert_ptr_nonnull(strstr(out, "VRAM used / total"));
	ck_assert_ptr_nonnull(strstr(out, "Resets"));
	row = strstr(out, "|   0 | vnpu (sim)");
	ck_assert_msg(row != NULL, "no device row in:\n%s", out);
	ck_assert_ptr_nonnull(strstr(row, "/ 64 MiB"));
	ck_assert_ptr_nonnull(strstr(row, "|     2 |"));
	ck_assert_ptr_null(strstr(row + 1, "|   1 |"));
	ck_assert_ptr_nonnull(strstr(out, "backend sim"));
	ck_assert_ptr_nonnull(strstr(out, "contexts: none (in-process"));
}
END_TEST

START_TEST(usage_errors)
{
	static char out[1024];

	ck_assert_int_eq(run("--backend cuda", out, sizeof(out)), 2);
	ck_assert_int_eq(run("--frobnicate", out, sizeof(out)), 2);
	ck_assert_int_eq(run("--backend", out, sizeof(out)), 2);
	/* Without a vnpu accel node, asking for drm finds nothing. */
	if (access("/dev/accel", F_OK))
		ck_assert_int_eq(run("--backend drm", out, sizeof(out)), 1);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("vnpu-smi");
	TCase *tc = tcase_create("smi");
	SRunner *sr;
	int failed;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-VNPU-SMI\n", argv[0]);
		return 2;
	}
	smi = argv[1];
	tcase_add_test(tc, json_has_the_sim_device);
	tcase_add_test(tc, table_has_a_row_per_device);
	tcase_add_test(tc, usage_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
