/* SPDX-License-Identifier: MIT */
/*
 * Operator schemas in PyTorch's syntax:
 *   ns::name.overload(Type name=default, *, Type(a!) out) -> (Type, Type)
 * Types: Tensor int SymInt float bool str Scalar ScalarType Device Layout
 * MemoryFormat Generator, each optional with `?`, as lists `T[]` / `T[N]`
 * (Tensor?[] for lists of optional tensors), tensors with alias
 * annotations `(a)` (view) and `(a!)` (written).
 */
#ifndef VNPU_SCHEMA_H
#define VNPU_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vnpu_type_base {
	VNPU_TYPE_TENSOR = 0,
	VNPU_TYPE_INT,		/* int and SymInt */
	VNPU_TYPE_FLOAT,
	VNPU_TYPE_BOOL,
	VNPU_TYPE_STR,
	VNPU_TYPE_SCALAR,
	VNPU_TYPE_SCALAR_TYPE,
	VNPU_TYPE_DEVICE,
	VNPU_TYPE_LAYOUT,
	VNPU_TYPE_MEMORY_FORMAT,
	VNPU_TYPE_GENERATOR,
};

struct vnpu_schema_type {
	uint8_t base;		/* enum vnpu_type_base */
	bool optional;		/* T? or T[]? */
	bool is_list;
	bool elem_optional;	/* T?[] */
	int32_t list_len;	/* T[N]: N; T[]: -1 */
};

struct vnpu_schema_arg {
	char *name;		/* NULL for an unnamed return */
	struct vnpu_schema_type type;
	char alias_set;		/* 'a'.. or 0 */
	bool is_write;		/* (a!) */
	bool kwarg_only;	/* after `*` */
	char *default_value;	/* text after '=', or NULL */
};

struct vnpu_schema {
	char *ns;		/* "aten" when not given */
	char *name;
	char *overload;		/* "" when none */
	uint32_t nargs, nrets;
	struct vnpu_schema_arg *args;
	struct vnpu_schema_arg *rets;
};

/* Parses text into *out (free with vnpu_schema_free). On a malformed
 * schema returns false and writes into err a message naming the column,
 * the schema and a caret under the offending character:
 *   "column 24: expected ',' or ')' after an argument\n
 *    add(Tensor self Tensor other) -> Tensor\n
 *                    ^" */
bool vnpu_schema_parse(const char *text, struct vnpu_schema **out,
		       char *err, size_t errlen);
void vnpu_schema_free(struct vnpu_schema *s);
/* Prints the schema back in canonical form ("aten::add.Tensor(Tensor self,
 * Tensor other, *, Scalar alpha=1) -> Tensor"); returns the length the
 * full text needs (as snprintf). */
size_t vnpu_schema_format(const struct vnpu_schema *s, char *buf,
			  size_t size);
/* True when two schemas have the same name, overload and signature. */
bool vnpu_schema_equal(const struct vnpu_schema *a,
		       const struct vnpu_schema *b);

#endif /* VNPU_SCHEMA_H */
