/* SPDX-License-Identifier: MIT */
/*
 * What the examples share: CHECK(call) stops the program with the
 * runtime's explanation (the status string and the last error's detail)
 * when a runtime call fails.
 */
#ifndef VNPU_EXAMPLE_CHECK_H
#define VNPU_EXAMPLE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <vnpu_runtime.h>

#define CHECK(call)                                                            \
	do {                                                                   \
		vnpu_error_t err_ = (call);                                    \
		if (err_ != VNPU_SUCCESS) {                                    \
			fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__,      \
				__LINE__, #call, vnpu_error_string(err_),      \
				vnpu_last_error_detail());                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

#endif
