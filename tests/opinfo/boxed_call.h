/* SPDX-License-Identifier: MIT */
/* The C dispatcher's boxed call, flattened for ctypes (boxed_call.c). */
#ifndef VNPU_BOXED_CALL_H
#define VNPU_BOXED_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnpu_dispatch.h"

void bc_init(void);
const char *bc_error(void);
struct vnpu_at_tensor *bc_tensor(int dtype, int type, int index,
				 const void *bytes, int64_t nelem,
				 uint32_t ndim, const int64_t *sizes,
				 const int64_t *strides, int64_t offset);
void bc_set_wrapped_number(struct vnpu_at_tensor *t);
void bc_release(struct vnpu_at_tensor *t);
int bc_meta(const struct vnpu_at_tensor *t, int *dtype, int *dev,
	    int64_t *sizes);
bool bc_read(struct vnpu_at_tensor *t, void *out);
struct vnpu_stack *bc_stack_new(void);
void bc_stack_free(struct vnpu_stack *s);
bool bc_push_none(struct vnpu_stack *s);
bool bc_push_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t);
bool bc_push_tensor_list(struct vnpu_stack *s, struct vnpu_at_tensor **v,
			 int64_t n);
bool bc_push_int(struct vnpu_stack *s, int64_t v);
bool bc_push_double(struct vnpu_stack *s, double v);
bool bc_push_bool(struct vnpu_stack *s, bool v);
bool bc_push_string(struct vnpu_stack *s, const char *v);
bool bc_push_int_list(struct vnpu_stack *s, const int64_t *v, int64_t n);
bool bc_push_bool_list(struct vnpu_stack *s, uint64_t bits, uint32_t n);
bool bc_push_device(struct vnpu_stack *s, int type, int index);
bool bc_push_scalar(struct vnpu_stack *s, int kind, int64_t i, double d);
bool bc_call(const char *name, struct vnpu_stack *s);
size_t bc_stack_size(const struct vnpu_stack *s);
int bc_stack_get(const struct vnpu_stack *s, size_t i, int64_t *iv, double *dv,
		 struct vnpu_at_tensor **t);
struct vnpu_at_tensor *bc_stack_list_item(const struct vnpu_stack *s, size_t i,
					  int64_t j);
int bc_schema_nargs(const char *name);
const char *bc_schema_arg(const char *name, int i, int *base, int *is_list,
			  int *optional);
bool bc_set_requires_grad(struct vnpu_at_tensor *t);
bool bc_backward(struct vnpu_at_tensor *out, struct vnpu_at_tensor *g);
struct vnpu_at_tensor *bc_grad(struct vnpu_at_tensor *t);
void bc_fallback_reset(void);
uint64_t bc_fallback_calls(void);

#endif
