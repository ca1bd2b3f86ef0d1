// SPDX-License-Identifier: MIT
/* A recursive-descent parser of PyTorch schema strings. Errors name the
 * column and show the schema with a caret under the offending character. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_schema.h"

struct parser {
	const char *text;
	size_t pos;
	char *err;
	size_t errlen;
	bool failed;
};

static bool fail(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool fail(struct parser *p, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	size_t n;

	if (p->failed)
		return false;
	p->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!p->err || !p->errlen)
		return false;
	n = (size_t)snprintf(p->err, p->errlen, "column %zu: %s\n%s\n",
			     p->pos + 1, msg, p->text);
	for (size_t i = 0; i < p->pos && n + 1 < p->errlen; i++)
		p->err[n++] = ' ';
	if (n + 1 < p->errlen)
		p->err[n++] = '^';
	if (n < p->errlen)
		p->err[n] = 0;
	else
		p->err[p->errlen - 1] = 0;
	return false;
}

static void skip_ws(struct parser *p)
{
	while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t')
		p->pos++;
}

static bool peek(struct parser *p, char c)
{
	skip_ws(p);
	return p->text[p->pos] == c;
}

static bool accept(struct parser *p, char c)
{
	if (!peek(p, c))
		return false;
	p->pos++;
	return true;
}

static bool expect(struct parser *p, char c, const char *what)
{
	if (accept(p, c))
		return true;
	return fail(p, "expected %s", what);
}

static char *ident(struct parser *p, const char *what)
{
	size_t start;
	char *s;

	skip_ws(p);
	start = p->pos;
	if (!isalpha((unsigned char)p->text[p->pos]) && p->text[p->pos] != '_') {
		fail(p, "expected %s", what);
		return NULL;
	}
	while (isalnum((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_')
		p->pos++;
	s = strndup(p->text + start, p->pos - start);
	if (!s)
		fail(p, "out of memory");
	return s;
}

static const struct {
	const char *name;
	enum vnpu_type_base base;
} type_names[] = {
	{ "Tensor", VNPU_TYPE_TENSOR }, { "int", VNPU_TYPE_INT },
	{ "SymInt", VNPU_TYPE_INT }, { "float", VNPU_TYPE_FLOAT },
	{ "bool", VNPU_TYPE_BOOL }, { "str", VNPU_TYPE_STR },
	{ "Scalar", VNPU_TYPE_SCALAR }, { "ScalarType", VNPU_TYPE_SCALAR_TYPE },
	{ "Device", VNPU_TYPE_DEVICE }, { "Layout", VNPU_TYPE_LAYOUT },
	{ "MemoryFormat", VNPU_TYPE_MEMORY_FORMAT },
	{ "Generator", VNPU_TYPE_GENERATOR },
};

/* Type [alias] [?] [ '[' N? ']' [?] ] */
static bool parse_type(struct parser *p, struct vnpu_schema_arg *a, bool ret)
{
	size_t start;
	char *name;
	bool found = false;

	skip_ws(p);
	start = p->pos;
	name = ident(p, "a type");
	if (!name)
		return false;
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (!strcmp(name, type_names[i].name)) {
			a->type.base = (uint8_t)type_names[i].base;
			found = true;
		}
	free(name);
	if (!found) {
		p->pos = start;
		return fail(p, "unknown type");
	}
	a->type.list_len = -1;
	if (p->text[p->pos] == '(') {
		if (a->type.base != VNPU_TYPE_TENSOR)
			return fail(p, "only Tensor takes an alias annotation");
		p->pos++;
		if (!islower((unsigned char)p->text[p->pos]))
			return fail(p, "expected an alias set letter (a-z)");
		a->alias_set = p->text[p->pos++];
		if (p->text[p->pos] == '!') {
			a->is_write = true;
			p->pos++;
		}
		if (p->text[p->pos] != ')')
			return fail(p, "expected ')' closing the alias annotation");
		p->pos++;
	}
	if (p->text[p->pos] == '?') {
		a->type.optional = true;
		p->pos++;
	}
	if (p->text[p->pos] == '[') {
		p->pos++;
		a->type.is_list = true;
		a->type.elem_optional = a->type.optional;
		a->type.optional = false;
		if (isdigit((unsigned char)p->text[p->pos])) {
			long n = strtol(p->text + p->pos, NULL, 10);

			while (isdigit((unsigned char)p->text[p->pos]))
				p->pos++;
			if (n < 1 || n > 64)
				return fail(p, "list length must be 1..64");
			a->type.list_len = (int32_t)n;
		}
		if (p->text[p->pos] != ']')
			return fail(p, "expected ']' closing the list type");
		p->pos++;
		if (p->text[p->pos] == '?') {
			a->type.optional = true;
			p->pos++;
		}
		if (a->type.elem_optional && a->type.base != VNPU_TYPE_TENSOR)
			return fail(p, "only Tensor?[] may hold optional elements");
	}
	if (ret && a->type.optional)
		return fail(p, "a return cannot be optional");
	return true;
}

/* A default: a number, a quoted string, a list [..], True/False/None or an
 * identifier (enum constant such as Mean or contiguous_format). */
static bool parse_default(struct parser *p, struct vnpu_schema_arg *a)
{
	size_t start;
	const char *t = p->text;

	skip_ws(p);
	start = p->pos;
	if (t[p->pos] == '\'' || t[p->pos] == '"') {
		char q = t[p->pos++];

		while (t[p->pos] && t[p->pos] != q)
			p->pos++;
		if (t[p->pos] != q)
			return fail(p, "unterminated string default");
		p->pos++;
	} else if (t[p->pos] == '[') {
		while (t[p->pos] && t[p->pos] != ']')
			p->pos++;
		if (t[p->pos] != ']')
			return fail(p, "unterminated list default");
		p->pos++;
	} else if (t[p->pos] == '-' || t[p->pos] == '.' ||
		   isdigit((unsigned char)t[p->pos])) {
		char *end;

		strtod(t + p->pos, &end);
		if (end == t + p->pos)
			return fail(p, "malformed number");
		p->pos = (size_t)(end - t);
	} else if (isalpha((unsigned char)t[p->pos]) || t[p->pos] == '_') {
		while (isalnum((unsigned char)t[p->pos]) || t[p->pos] == '_')
			p->pos++;
	} else {
		return fail(p, "expected a default value");
	}
	if (!strncmp(t + start, "None", 4) && p->pos - start == 4 &&
	    !a->type.optional)
		return fail(p, "default None needs an optional type");
	a->default_value = strndup(t + start, p->pos - start);
	return a->default_value || fail(p, "out of memory");
}

static bool push_arg(struct parser *p, struct vnpu_schema_arg **v,
		     uint32_t *n, struct vnpu_schema_arg **out)
{
	struct vnpu_schema_arg *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return fail(p, "out of memory");
	*v = nv;
	*out = &nv[(*n)++];
	memset(*out, 0, sizeof(**out));
	return true;
}

static bool name_taken(struct vnpu_schema *s, const char *name)
{
	for (uint32_t i = 0; i + 1 < s->nargs; i++)
		if (!strcmp(s->args[i].name, name))
			return true;
	return false;
}

static bool parse_args(struct parser *p, struct vnpu_schema *s)
{
	bool kw = false, seen_star = false;

	if (!expect(p, '(', "'(' after the operator name"))
		return false;
	if (accept(p, ')'))
		return true;
	for (;;) {
		struct vnpu_schema_arg *a;
		size_t name_pos;

		if (accept(p, '*')) {
			if (seen_star) {
				p->pos--;
				return fail(p, "'*' given twice");
			}
			seen_star = kw = true;
			if (!expect(p, ',', "',' after '*'"))
				return false;
			continue;
		}
		if (!push_arg(p, &s->args, &s->nargs, &a))
			return false;
		a->kwarg_only = kw;
		if (!parse_type(p, a, false))
			return false;
		skip_ws(p);
		name_pos = p->pos;
		a->name = ident(p, "an argument name after the type");
		if (!a->name)
			return false;
		if (name_taken(s, a->name)) {
			p->pos = name_pos;
			return fail(p, "argument name '%s' used twice", a->name);
		}
		if (accept(p, '=') && !parse_default(p, a))
			return false;
		if (accept(p, ')'))
			return true;
		if (!expect(p, ',', "',' or ')' after an argument"))
			return false;
	}
}

static bool parse_return(struct parser *p, struct vnpu_schema *s)
{
	struct vnpu_schema_arg *r;

	if (!push_arg(p, &s->rets, &s->nrets, &r) || !parse_type(p, r, true))
		return false;
	skip_ws(p);
	if (isalpha((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_') {
		r->name = ident(p, "a return name");
		if (!r->name)
			return false;
	}
	return true;
}

static bool parse_returns(struct parser *p, struct vnpu_schema *s)
{
	skip_ws(p);
	if (!(p->text[p->pos] == '-' && p->text[p->pos + 1] == '>'))
		return fail(p, "expected '->' before the returns");
	p->pos += 2;
	if (accept(p, '(')) {
		if (accept(p, ')'))
			return true;
		for (;;) {
			if (!parse_return(p, s))
				return false;
			if (accept(p, ')'))
				return true;
			if (!expect(p, ',', "',' or ')' in the returns"))
				return false;
		}
	}
	return parse_return(p, s);
}

static bool check_aliases(struct parser *p, struct vnpu_schema *s)
{
	/* a written return must name a written argument's alias set */
	for (uint32_t r = 0; r < s->nrets; r++) {
		bool found = false;

		if (!s->rets[r].alias_set)
			continue;
		for (uint32_t i = 0; i < s->nargs; i++)
			if (s->args[i].alias_set == s->rets[r].alias_set &&
			    s->args[i].is_write == s->rets[r].is_write)
				found = true;
		if (!found)
			return fail(p, "return %u has alias set '%c%s' that no argument has",
				    r, s->rets[r].alias_set,
				    s->rets[r].is_write ? "!" : "");
	}
	return true;
}

bool vnpu_schema_parse(const char *text, struct vnpu_schema **out, char *err,
		       size_t errlen)
{
	struct parser p = { text, 0, err, errlen, false };
	struct vnpu_schema *s = calloc(1, sizeof(*s));
	char *first;

	if (err && errlen)
		err[0] = 0;
	if (!s)
		return fail(&p, "out of memory");
	first = ident(&p, "an operator name");
	if (!first)
		goto bad;
	if (p.text[p.pos] == ':' && p.text[p.pos + 1] == ':') {
		p.pos += 2;
		s->ns = first;
		s->name = ident(&p, "an operator name after '::'");
		if (!s->name)
			goto bad;
	} else {
		s->ns = strdup("aten");
		s->name = first;
	}
	if (p.text[p.pos] == '.') {
		p.pos++;
		s->overload = ident(&p, "an overload name after '.'");
		if (!s->overload)
			goto bad;
	} else {
		s->overload = strdup("");
	}
	if (!s->ns || !s->overload)
		goto bad;
	if (!parse_args(&p, s) || !parse_returns(&p, s))
		goto bad;
	skip_ws(&p);
	if (p.text[p.pos]) {
		fail(&p, "unexpected text after the returns");
		goto bad;
	}
	if (!check_aliases(&p, s))
		goto bad;
	*out = s;
	return true;
bad:
	if (!p.failed)
		fail(&p, "out of memory");
	vnpu_schema_free(s);
	return false;
}

static void free_args(struct vnpu_schema_arg *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(a[i].name);
		free(a[i].default_value);
	}
	free(a);
}

void vnpu_schema_free(struct vnpu_schema *s)
{
	if (!s)
		return;
	free(s->ns);
	free(s->name);
	free(s->overload);
	free_args(s->args, s->nargs);
	free_args(s->rets, s->nrets);
	free(s);
}

static size_t fmt_type(const struct vnpu_schema_arg *a, char *buf, size_t size)
{
	const char *name = "?";
	size_t n;

	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].base == a->type.base) {
			name = type_names[i].name;
			break;
		}
	n = (size_t)snprintf(buf, size, "%s", name);
	if (a->alias_set)
		n += (size_t)snprintf(buf + (n < size ? n : size),
				      n < size ? size - n : 0, "(%c%s)",
				      a->alias_set, a->is_write ? "!" : "");
	if (a->type.is_list) {
		char len[16] = "";

		if (a->type.list_len > 0)
			snprintf(len, sizeof(len), "%d", a->type.list_len);
		n += (size_t)snprintf(buf + (n < size ? n : size),
				      n < size ? size - n : 0, "%s[%s]%s",
				      a->type.elem_optional ? "?" : "", len,
				      a->type.optional ? "?" : "");
	} else if (a->type.optional) {
		n += (size_t)snprintf(buf + (n < size ? n : size),
				      n < size ? size - n : 0, "?");
	}
	return n;
}

#define APPEND(...) \
	(n += (size_t)snprintf(buf + (n < size ? n : size), \
			       n < size ? size - n : 0, __VA_ARGS__))

size_t vnpu_schema_format(const struct vnpu_schema *s, char *buf, size_t size)
{
	size_t n = 0;
	bool kw = false;
	char t[64];

	APPEND("%s::%s%s%s(", s->ns, s->name, s->overload[0] ? "." : "",
	       s->overload);
	for (uint32_t i = 0; i < s->nargs; i++) {
		const struct vnpu_schema_arg *a = &s->args[i];

		if (a->kwarg_only && !kw) {
			APPEND("%s*", i ? ", " : "");
			kw = true;
		}
		fmt_type(a, t, sizeof(t));
		APPEND("%s%s %s", (i || kw) ? ", " : "", t, a->name);
		if (a->default_value)
			APPEND("=%s", a->default_value);
	}
	APPEND(") -> ");
	if (s->nrets != 1)
		APPEND("(");
	for (uint32_t i = 0; i < s->nrets; i++) {
		fmt_type(&s->rets[i], t, sizeof(t));
		APPEND("%s%s%s%s", i ? ", " : "", t, s->rets[i].name ? " " : "",
		       s->rets[i].name ? s->rets[i].name : "");
	}
	if (s->nrets != 1)
		APPEND(")");
	return n;
}

static bool arg_equal(const struct vnpu_schema_arg *a,
		      const struct vnpu_schema_arg *b)
{
	return !memcmp(&a->type, &b->type, sizeof(a->type)) &&
	       a->alias_set == b->alias_set && a->is_write == b->is_write &&
	       a->kwarg_only == b->kwarg_only;
}

bool vnpu_schema_equal(const struct vnpu_schema *a,
		       const struct vnpu_schema *b)
{
	if (strcmp(a->ns, b->ns) || strcmp(a->name, b->name) ||
	    strcmp(a->overload, b->overload) || a->nargs != b->nargs ||
	    a->nrets != b->nrets)
		return false;
	for (uint32_t i = 0; i < a->nargs; i++)
		if (!arg_equal(&a->args[i], &b->args[i]))
			return false;
	for (uint32_t i = 0; i < a->nrets; i++)
		if (!arg_equal(&a->rets[i], &b->rets[i]))
			return false;
	return true;
}
