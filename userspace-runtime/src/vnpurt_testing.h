/* SPDX-License-Identifier: MIT */
/*
 * Test-only entry points of libvnpurt (not part of the public API; the
 * tests link the static library). Fault injection needs the sim backend
 * in test mode: VNPU_SIM_TEST_MODE=1.
 */
#ifndef VNPURT_TESTING_H
#define VNPURT_TESTING_H

#include <stdbool.h>
#include <stdint.h>

#include "vnpu_runtime.h"

/* Submits a TEST_INJECT command (enum vnpu_inject_kind: 1 hang, 2 MMU
 * fault at va, 3 fatal, 4 lost interrupt) on stream, in stream order.
 * VNPU_ERROR_UNSUPPORTED without test mode. */
vnpu_error_t vnpurt_test_inject(vnpu_stream_t stream, uint32_t kind,
				uint64_t va, bool write);
/* The device VA behind a device or pinned host pointer. */
vnpu_error_t vnpurt_test_device_va(const void *ptr, uint64_t *va);
/* Resets of the current device since it was opened (RESET_COUNT). */
vnpu_error_t vnpurt_test_reset_count(uint32_t *count);
/* The hardware queue a stream submits to. */
vnpu_error_t vnpurt_test_stream_queue(vnpu_stream_t stream, unsigned *qid);
/* A gate: the stream's hardware queue waits, on the device, until the
 * 64-bit word at `word` (inside vnpu_host_malloc() memory, 8-byte aligned)
 * is >= value. The host opens it by storing to the word. */
vnpu_error_t vnpurt_test_gate(vnpu_stream_t stream, const uint64_t *word,
			      uint64_t value);
/* Sim in test mode: corrupts the current device's firmware image in host
 * memory, so that the device refuses it at its next boot: the next reset
 * (an injected hang) loses the device. */
vnpu_error_t vnpurt_test_corrupt_firmware(void);
/* Sim in test mode: the backend's list of failures not yet taken, of the
 * stream's hardware queue, gets room for `capacity` (>= 1) of them; with
 * grows false it never grows, as if out of memory, so that a full list
 * merges. VNPU_ERROR_INVALID_VALUE when fewer than the pending ones. */
vnpu_error_t vnpurt_test_failure_list(vnpu_stream_t stream, unsigned capacity,
				      bool grows);
/* The started runtime's count of vnpu_init references, read and set (a
 * test of the count's limit would otherwise call vnpu_init 2^31 times).
 * VNPU_ERROR_NOT_INITIALIZED when the runtime is not started; refs >= 1. */
vnpu_error_t vnpurt_test_init_refs(int *refs);
vnpu_error_t vnpurt_test_set_init_refs(int refs);
/* The VNPU_TRACE trace's next `count` allocations fail (0: none). */
void vnpurt_test_trace_fail_allocs(unsigned count);

#endif /* VNPURT_TESTING_H */
