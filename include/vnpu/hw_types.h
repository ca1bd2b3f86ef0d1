/* SPDX-License-Identifier: MIT */
/*
 * Fixed-width types and compile-time checks for the vnpu device headers, so
 * the same headers build in the Linux kernel, in QEMU and in user space.
 */
#ifndef VNPU_HW_TYPES_H
#define VNPU_HW_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

/* Every device-visible struct and offset is pinned with this (the headers
 * are also included from C++: torch_vnpu). */
#ifdef __cplusplus
#define VNPU_STATIC_ASSERT static_assert
#else
#define VNPU_STATIC_ASSERT _Static_assert
#endif
#define VNPU_ASSERT_SIZE(type, size) \
	VNPU_STATIC_ASSERT(sizeof(type) == (size), #type " must be " #size " bytes")
#define VNPU_ASSERT_OFFSET(type, field, off)             \
	VNPU_STATIC_ASSERT(offsetof(type, field) == (off),   \
		       #type "." #field " must be at " #off)

#endif /* VNPU_HW_TYPES_H */
