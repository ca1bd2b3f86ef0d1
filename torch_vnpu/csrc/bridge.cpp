// SPDX-License-Identifier: MIT
// The bridge between PyTorch and the dispatcher's NPU kernels: PyTorch
// tensors become dispatcher tensors on the same storages (no copy), the
// boxed stack is translated argument by argument by name, the NPU kernel
// runs, and its results come back as PyTorch tensors sharing storage with
// the inputs they alias. An NPU kernel that would fall back leaves the
// whole op to PyTorch's own CPU kernels (cpu_fallback).
#include "backend.h"
#include "typed_call.h"

#include "vnpu_runtime.h"

#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

extern "C" {
#include "vnpu_schema.h"
}

namespace torch_vnpu {

// "aten::addcdiv: Integer division ..." -> "Integer division ..."
static std::string without_op_name(const std::string &msg)
{
	size_t colon = msg.find(": ");

	if (msg.compare(0, 6, "aten::"))
		return msg;
	if (colon == std::string::npos ||
	    msg.find(' ') < colon)
		return msg;
	return msg.substr(colon + 2);
}

[[noreturn]] void throw_dispatch_error(const char *what)
{
	enum vnpu_at_error code = vnpu_at_error_code();
	std::string msg = vnpu_at_error_message();

	vnpu_at_error_clear();
	// A bad argument to a PyTorch op is told in PyTorch's own words,
	// which name no op (programs match them from the start): the
	// dispatcher's "aten::op: " goes. Our npu:: ops and other failures
	// say where they happened.
	bool argument = code == VNPU_AT_ERR_VALUE || code == VNPU_AT_ERR_INDEX;
	if (argument)
		msg = without_op_name(msg);
	if (msg.empty())
		msg = std::string(what) + ": failed without an error message";
	else if (!argument && msg.find(what) == std::string::npos)
		msg = std::string(what) + ": " + msg;
	if (code == VNPU_AT_ERR_OOM)
		throw c10::OutOfMemoryError({__func__, __FILE__, __LINE__}, msg);
	TORCH_CHECK_INDEX(code != VNPU_AT_ERR_INDEX, msg);
	TORCH_CHECK(false, msg);
}

// ---- dtypes and devices -----------------------------------------------------

static bool dtype_to_c(at::ScalarType st, enum vnpu_at_dtype *out)
{
	switch (st) {
	case at::kByte: *out = VNPU_AT_U8; return true;
	case at::kChar: *out = VNPU_AT_I8; return true;
	case at::kShort: *out = VNPU_AT_I16; return true;
	case at::kInt: *out = VNPU_AT_I32; return true;
	case at::kLong: *out = VNPU_AT_I64; return true;
	case at::kHalf: *out = VNPU_AT_F16; return true;
	case at::kFloat: *out = VNPU_AT_F32; return true;
	case at::kDouble: *out = VNPU_AT_F64; return true;
	case at::kBool: *out = VNPU_AT_BOOL; return true;
	case at::kBFloat16: *out = VNPU_AT_BF16; return true;
	default: return false;
	}
}

static at::ScalarType dtype_from_c(int dt)
{
	switch (dt) {
	case VNPU_AT_U8: return at::kByte;
	case VNPU_AT_I8: return at::kChar;
	case VNPU_AT_I16: return at::kShort;
	case VNPU_AT_I32: return at::kInt;
	case VNPU_AT_I64: return at::kLong;
	case VNPU_AT_F16: return at::kHalf;
	case VNPU_AT_F32: return at::kFloat;
	case VNPU_AT_F64: return at::kDouble;
	case VNPU_AT_BOOL: return at::kBool;
	case VNPU_AT_BF16: return at::kBFloat16;
	}
	TORCH_CHECK(false, "torch_vnpu: the dispatcher returned dtype ", dt);
}

// ---- tensors -------------------------------------------------------------------

namespace {

// Dispatcher references owned while one boxed call runs.
struct CTensors {
	std::vector<struct vnpu_at_tensor *> v;
	CTensors() = default;
	CTensors(const CTensors &) = delete;
	CTensors &operator=(const CTensors &) = delete;
	~CTensors()
	{
		for (auto *t : v)
			vnpu_at_release(t);
	}
};

struct CStack {
	struct vnpu_stack s;
	CStack() { vnpu_stack_init(&s); }
	~CStack() { vnpu_stack_destroy(&s); }
	CStack(const CStack &) = delete;
	CStack &operator=(const CStack &) = delete;
};

// Thrown while translating arguments the dispatcher cannot represent
// (a dtype it lacks, more than 8 dims, another device): the op then runs
// on PyTorch's CPU kernels as any op without an NPU kernel.
struct Unrepresentable : std::runtime_error {
	explicit Unrepresentable(const std::string &why)
		: std::runtime_error("torch_vnpu: the dispatcher cannot take " + why)
	{
	}
};

} // namespace

// t as a dispatcher tensor on the same bytes (a new reference).
static struct vnpu_at_tensor *to_c(const at::Tensor &t)
{
	enum vnpu_at_dtype dt;
	struct vnpu_at_tensor *c;
	int64_t nd = t.dim();

	if (!dtype_to_c(t.scalar_type(), &dt))
		throw Unrepresentable(std::string("dtype ") +
				      c10::toString(t.scalar_type()));
	if (nd > VNPU_AT_MAX_DIMS)
		throw Unrepresentable("more than 8 dims");
	if (t.layout() != at::kStrided)
		throw Unrepresentable("a layout other than strided");
	// a lazily negated view (torch._neg_view) reads other values than
	// its bytes: the kernels see bytes
	if (t.is_neg() || t.is_conj())
		throw Unrepresentable("a negated or conjugated view");
	if (t.device().type() == kNpu) {
		struct vnpu_at_storage *s = acquire_storage(t.storage());

		c = vnpu_at_tensor_on(s, dt, (uint32_t)nd, t.sizes().data(),
				      t.strides().data(), t.storage_offset());
		vnpu_at_storage_release(s);
	} else if (t.device().is_cpu()) {
		c = vnpu_at_from_blob(t.data_ptr(), (uint32_t)nd,
				      t.sizes().data(), t.strides().data(), dt);
	} else {
		throw Unrepresentable("device " + t.device().str());
	}
	if (!c)
		throw_dispatch_error("torch_vnpu");
	// a Python scalar PyTorch wrapped: promotion ranks it last
	c->wrapped_number = t.unsafeGetTensorImpl()->is_wrapped_number();
	return c;
}

// A copy between two tensors of one shape and one element size, as u8
// tensors with one more dim (the element's bytes): copies of a dtype the
// dispatcher lacks (complex) or of a rank beyond its 8 dims are
// byte copies, which its copy engine does on any strides. Dims of size 1
// are dropped and dims contiguous in both tensors merged first, so a
// tensor of many dims copies as one of few.
struct ByteGeometry {
	std::vector<int64_t> sizes, dst_strides, src_strides;
};

static ByteGeometry byte_geometry(const at::Tensor &dst, const at::Tensor &src)
{
	ByteGeometry g;
	int64_t isz = (int64_t)dst.itemsize();

	for (int64_t d = 0; d < dst.dim(); d++) {
		int64_t sz = dst.size(d), ds = dst.stride(d) * isz,
			ss = src.stride(d) * isz;

		if (sz == 1)
			continue;
		if (!g.sizes.empty() &&
		    g.dst_strides.back() == ds * sz && g.src_strides.back() == ss * sz) {
			g.sizes.back() *= sz;
			g.dst_strides.back() = ds;
			g.src_strides.back() = ss;
			continue;
		}
		g.sizes.push_back(sz);
		g.dst_strides.push_back(ds);
		g.src_strides.push_back(ss);
	}
	g.sizes.push_back(isz);
	g.dst_strides.push_back(1);
	g.src_strides.push_back(1);
	if (g.sizes.size() > VNPU_AT_MAX_DIMS)
		throw Unrepresentable("a copy of more than 7 non-mergeable dims");
	return g;
}

static struct vnpu_at_tensor *bytes_of(const at::Tensor &t,
				       const std::vector<int64_t> &sizes,
				       const std::vector<int64_t> &strides)
{
	struct vnpu_at_tensor *c;

	if (t.device().type() == kNpu) {
		struct vnpu_at_storage *s = acquire_storage(t.storage());

		c = vnpu_at_tensor_on(s, VNPU_AT_U8, (uint32_t)sizes.size(),
				      sizes.data(), strides.data(),
				      t.storage_offset() * (int64_t)t.itemsize());
		vnpu_at_storage_release(s);
	} else {
		TORCH_CHECK(t.device().is_cpu(), "torch_vnpu: a copy between ",
			    t.device(), " and npu");
		c = vnpu_at_from_blob(t.data_ptr(), (uint32_t)sizes.size(),
				      sizes.data(), strides.data(), VNPU_AT_U8);
	}
	if (!c)
		throw_dispatch_error("torch_vnpu");
	return c;
}

static void byte_copy(const at::Tensor &dst, const at::Tensor &src)
{
	if (!dst.numel())
		return;
	ByteGeometry g = byte_geometry(dst, src);
	struct vnpu_at_tensor *d = bytes_of(dst, g.sizes, g.dst_strides);
	struct vnpu_at_tensor *s = nullptr, *r = nullptr;

	try {
		s = bytes_of(src, g.sizes, g.src_strides);
	} catch (...) {
		vnpu_at_release(d);
		throw;
	}
	r = vnpu_op_copy_(d, s, false);
	vnpu_at_release(d);
	vnpu_at_release(s);
	if (!r)
		throw_dispatch_error("aten::copy_");
	vnpu_at_release(r);
}

void copy_storage_bytes(const c10::Storage &npu, int64_t off, int64_t len,
			void *host, bool to_host)
{
	struct vnpu_at_storage *st = storage_of(npu);

	TORCH_CHECK(st, "torch_vnpu: an npu storage not allocated by torch_vnpu");
	TORCH_CHECK(off >= 0 && len >= 0 && (size_t)(off + len) <= st->nbytes,
		    "torch_vnpu: bytes [", off, ", ", off + len,
		    ") outside an npu storage of ", st->nbytes);
	if (!len)
		return;
	// one DMA on the current stream, after the kernels queued there
	c10::DeviceGuard guard(npu.device());
	vnpu_stream_t stream = (vnpu_stream_t)vnpu_at_npu_stream();
	char *dev = (char *)st->data + off;
	vnpu_error_t e;

	if (to_host) {
		e = vnpu_memcpy_async(host, dev, (size_t)len, VNPU_MEMCPY_D2H, stream);
		if (e == VNPU_SUCCESS)
			e = vnpu_stream_synchronize(stream);
	} else {
		st->version++; // a cached format cast of it is stale
		e = vnpu_memcpy_async(dev, host, (size_t)len, VNPU_MEMCPY_H2D, stream);
	}
	TORCH_CHECK(e == VNPU_SUCCESS, "torch_vnpu: a fallback's storage copy: ",
		    vnpu_error_string(e));
}

// copy_ for dtypes the dispatcher lacks: byte copies across devices, the
// conversion (if any) by PyTorch on the CPU.
static void copy_any_dtype(const at::Tensor &dst, const at::Tensor &src)
{
	TORCH_CHECK(dst.sizes() == src.sizes() || src.numel() == 1 ||
		    src.dim() <= dst.dim(),
		    "copy_: shapes ", dst.sizes(), " and ", src.sizes());
	at::Tensor s = src.expand(dst.sizes());
	// as PyTorch's copy_: a meta tensor has no data, a copy into one
	// only checks the shapes (t.to("meta"))
	if (dst.is_meta())
		return;
	TORCH_CHECK_NOT_IMPLEMENTED(!s.is_meta(),
				    "Cannot copy out of meta tensor; no data!");
	if (dst.device().is_cpu() && s.device().is_cpu()) {
		dst.copy_(s);
		return;
	}
	// complex tensors may carry lazy conjugate/negative bits: bytes are
	// copied without them, the values they stand for are made on the host
	bool lazy = s.is_conj() || s.is_neg() || dst.is_conj() || dst.is_neg();
	if (dst.scalar_type() == s.scalar_type() && !lazy) {
		byte_copy(dst, s);
		return;
	}
	at::Tensor host = s;
	if (s.device().type() == kNpu) {
		at::Tensor raw = s.is_conj() ? s.conj() : s;
		raw = raw.is_neg() ? at::_neg_view(raw) : raw;
		host = at::empty(s.sizes(), s.options().device(at::kCPU));
		byte_copy(host, raw);
		if (s.is_conj())
			host = host.conj_physical();
		if (s.is_neg())
			host = host.neg();
	}
	host = host.resolve_conj().resolve_neg().to(dst.scalar_type());
	if (dst.device().is_cpu()) {
		dst.copy_(host);
		return;
	}
	// the bytes of a conjugate/negative view hold conj(x)/-x
	if (dst.is_conj())
		host = host.conj_physical();
	if (dst.is_neg())
		host = host.neg();
	at::Tensor raw = dst.is_conj() ? dst.conj() : dst;
	byte_copy(raw.is_neg() ? at::_neg_view(raw) : raw, host.contiguous());
}

static bool same_sizes_strides(const at::Tensor &t,
			       const struct vnpu_at_tensor *c)
{
	if (t.dim() != c->ndim)
		return false;
	for (int64_t i = 0; i < c->ndim; i++)
		if (t.size(i) != c->sizes[i] || t.stride(i) != c->strides[i])
			return false;
	return true;
}

static bool same_geometry(const at::Tensor &t, const struct vnpu_at_tensor *c)
{
	return t.storage_offset() == c->offset && same_sizes_strides(t, c);
}

static void set_geometry(const at::Tensor &t, const struct vnpu_at_tensor *c)
{
	t.unsafeGetTensorImpl()->set_sizes_and_strides(
		c10::IntArrayRef(c->sizes, c->ndim),
		c10::IntArrayRef(c->strides, c->ndim), c->offset);
}

// The tensor arguments of a call, for the results that share their storage.
using InputRefs = c10::ArrayRef<const at::Tensor *>;

// A PyTorch tensor for the dispatcher tensor r: on an input's storage
// when r shares it (a view keeps aliasing), else on a new wrapper.
static at::Tensor from_c(struct vnpu_at_tensor *r, InputRefs inputs)
{
	at::ScalarType st = dtype_from_c(r->dtype);

	if (r->storage->device.type != VNPU_AT_NPU) {
		auto opts = at::TensorOptions().dtype(st);
		void *data = vnpu_at_data(r);

		return at::from_blob(data, c10::IntArrayRef(r->sizes, r->ndim),
				     c10::IntArrayRef(r->strides, r->ndim),
				     opts).clone();
	}
	c10::Storage storage;
	for (const at::Tensor *in : inputs)
		if (in->defined() && in->device().type() == kNpu &&
		    storage_of(in->storage()) == r->storage) {
			storage = in->storage();
			break;
		}
	if (!storage)
		storage = wrap_storage(r->storage);
	at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
		std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
		caffe2::TypeMeta::fromScalarType(st));
	set_geometry(t, r);
	return t;
}

// ---- arguments --------------------------------------------------------------

static std::vector<int64_t> int_list(const c10::IValue &v)
{
	if (v.isIntList())
		return v.toIntVector();
	std::vector<int64_t> out;
	TORCH_CHECK(v.isList(), "torch_vnpu: expected an int list, got ",
		    v.tagKind());
	for (const c10::IValue &e : v.toListRef()) {
		if (e.isInt())
			out.push_back(e.toInt());
		else if (e.isSymInt())
			out.push_back(e.toSymInt().expect_int());
		else
			TORCH_CHECK(false, "torch_vnpu: expected an int list element, got ",
				    e.tagKind());
	}
	return out;
}

static void pushed(bool ok)
{
	if (!ok)
		throw_dispatch_error("torch_vnpu");
}

static struct vnpu_at_device device_to_c(std::optional<at::Device> d)
{
	if (!d.has_value())
		return VNPU_AT_DEV_NONE;
	if (d->is_cpu())
		return VNPU_AT_DEV_CPU;
	if (d->type() != kNpu)
		throw Unrepresentable("device " + d->str());
	return VNPU_AT_DEV_NPU((int8_t)(d->has_index() ? d->index() : current_device()));
}

static void push_device(struct vnpu_stack *s, const c10::IValue &v)
{
	if (v.isNone()) {
		pushed(vnpu_stack_push_none(s));
		return;
	}
	pushed(vnpu_stack_push_device(s, device_to_c(v.toDevice())));
}

// Scalars travel as int64, double or bool: a complex, unsigned 64-bit or
// symbolic one is left to PyTorch's kernels.
static struct vnpu_at_scalar scalar_to_c(const at::Scalar &v)
{
	if (v.isSymbolic())
		throw Unrepresentable("a symbolic scalar");
	struct vnpu_at_scalar c = {};

	switch (v.type()) {
	case at::kLong:
		c.kind = VNPU_AT_SCALAR_INT;
		c.i = v.toLong();
		return c;
	case at::kDouble:
		c.kind = VNPU_AT_SCALAR_DOUBLE;
		c.d = v.toDouble();
		return c;
	case at::kBool:
		c.kind = VNPU_AT_SCALAR_BOOL;
		c.b = v.toBool();
		return c;
	default:
		throw Unrepresentable(std::string("a ") + c10::toString(v.type()) +
				      " scalar");
	}
}

static void push_scalar(struct vnpu_stack *s, const at::Scalar &v)
{
	pushed(vnpu_stack_push_scalar(s, scalar_to_c(v)));
}

static void push_none(struct vnpu_stack *s, const struct vnpu_schema_arg *a)
{
	const struct vnpu_schema_type *ty = &a->type;

	TORCH_CHECK(ty->optional || ty->elem_optional || a->default_value,
		    "torch_vnpu: argument '", a->name, "' is None");
	pushed(vnpu_stack_push_none(s));
}

// Pushes t, which `owned` keeps while the call runs; returns it.
static struct vnpu_at_tensor *push_tensor(struct vnpu_stack *s,
					  const at::Tensor &t, CTensors &owned)
{
	struct vnpu_at_tensor *c = to_c(t);

	owned.v.push_back(c);
	pushed(vnpu_stack_push_tensor(s, c));
	return c;
}

static void push_int_list(struct vnpu_stack *s, const struct vnpu_schema_arg *a,
			  c10::IntArrayRef l)
{
	TORCH_CHECK(a->type.base == VNPU_TYPE_INT,
		    "torch_vnpu: unsupported list argument '", a->name, "'");
	// a shape past the dispatcher's rank: PyTorch's kernels take it
	if ((!strcmp(a->name, "size") || !strcmp(a->name, "stride")) &&
	    l.size() > VNPU_AT_MAX_DIMS)
		throw Unrepresentable("more than 8 dims");
	pushed(vnpu_stack_push_int_list(
		s, (struct vnpu_at_int_array){ l.data(), (int64_t)l.size() }));
}

// bool[N] (output masks) as the dispatcher's bit list.
static void push_bool_list(struct vnpu_stack *s, const struct vnpu_schema_arg *a,
			   const c10::List<bool> &l)
{
	struct vnpu_at_bool_list m = { (uint32_t)l.size(), 0 };

	TORCH_CHECK(l.size() <= VNPU_AT_BOOL_LIST_MAX, "torch_vnpu: argument '",
		    a->name, "' has ", l.size(), " elements, more than ",
		    VNPU_AT_BOOL_LIST_MAX);
	for (size_t i = 0; i < l.size(); i++)
		if (l.get(i))
			m.bits |= UINT64_C(1) << i;
	pushed(vnpu_stack_push_bool_list(s, m));
}

// Pushes torch value v for dispatcher argument a; returns the dispatcher
// tensor when v is a tensor.
static struct vnpu_at_tensor *push_arg(struct vnpu_stack *s,
				       const struct vnpu_schema_arg *a,
				       const c10::IValue &v, CTensors &owned)
{
	const struct vnpu_schema_type *ty = &a->type;

	// an optional tensor arrives as an undefined tensor from C++ callers
	if (v.isNone() || (v.isTensor() && !v.toTensor().defined())) {
		push_none(s, a);
	} else if (ty->base == VNPU_TYPE_TENSOR && !ty->is_list) {
		return push_tensor(s, v.toTensor(), owned);
	} else if (ty->base == VNPU_TYPE_TENSOR) {
		std::vector<struct vnpu_at_tensor *> l;

		for (const c10::IValue &e : v.toListRef()) {
			struct vnpu_at_tensor *t = nullptr;

			if (!e.isNone() && e.toTensor().defined()) {
				t = to_c(e.toTensor());
				owned.v.push_back(t);
			}
			l.push_back(t);
		}
		pushed(vnpu_stack_push_tensor_list(
			s, (struct vnpu_at_tensor_list){ l.data(), (int64_t)l.size() }));
	} else if (ty->is_list && ty->base == VNPU_TYPE_BOOL) {
		push_bool_list(s, a, v.toBoolList());
	} else if (ty->is_list) {
		push_int_list(s, a, int_list(v));
	} else {
		switch (ty->base) {
		case VNPU_TYPE_INT:
			pushed(vnpu_stack_push_int(s, v.isSymInt() ?
						   v.toSymInt().expect_int() : v.toInt()));
			break;
		case VNPU_TYPE_FLOAT:
			pushed(vnpu_stack_push_double(s, v.toDouble()));
			break;
		case VNPU_TYPE_BOOL:
			pushed(vnpu_stack_push_bool(s, v.toBool()));
			break;
		case VNPU_TYPE_STR:
			// a NUL inside: PyTorch's kernel judges the value
			if (v.toStringRef().find('\0') != std::string::npos)
				throw Unrepresentable("a string with a NUL inside");
			pushed(vnpu_stack_push_string(s, v.toStringRef().c_str()));
			break;
		case VNPU_TYPE_SCALAR:
			if (!v.isInt() && !v.isDouble() && !v.isBool())
				throw Unrepresentable(std::string("a ") + v.tagKind() +
						      " scalar");
			push_scalar(s, v.toScalar());
			break;
		case VNPU_TYPE_SCALAR_TYPE: {
			enum vnpu_at_dtype dt;

			if (!dtype_to_c(v.toScalarType(), &dt))
				throw Unrepresentable(std::string("dtype ") +
						      c10::toString(v.toScalarType()));
			pushed(vnpu_stack_push_int(s, dt));
			break;
		}
		case VNPU_TYPE_DEVICE:
			push_device(s, v);
			break;
		default:
			TORCH_CHECK(false, "torch_vnpu: unsupported argument '",
				    a->name, "'");
		}
	}
	return nullptr;
}

// Arguments PyTorch's schema has and ours leaves out: accepted when they
// ask for what the dispatcher's kernel does anyway.
static void check_torch_only(const std::string &n, const c10::IValue &v)
{
	if (v.isNone())
		return;
	if (n == "layout" && v.toLayout() == at::kStrided)
		return;
	if (n == "pin_memory" && !v.toBool())
		return;
	// sort.stable: the device's sort is stable, which either value allows
	if (n == "stable" && v.isBool())
		return;
	if (n == "memory_format" &&
	    (v.toMemoryFormat() == at::MemoryFormat::Contiguous ||
	     v.toMemoryFormat() == at::MemoryFormat::Preserve))
		return;
	throw Unrepresentable(n + "=" + c10::IValue(v).tagKind());
}

// ---- the call ------------------------------------------------------------

namespace {

// How the dispatcher op's arguments map to the PyTorch op's (resolved
// once per pair: a functional kernel also serves its in-place and out=
// variants, whose schemas place the arguments differently).
struct Binding {
	const struct vnpu_op *op;
	std::vector<int> torch_index;	// per dispatcher argument
	std::vector<int> targets;	// PyTorch's written args we don't pass
	// what PyTorch's kernel of the op checks of its written tensors
	// beyond TensorIterator's rules (check_aliasing), from the yaml
	OpFacts facts;
	bool is_copy;			// copy_: TensorIterator's rules
};

} // namespace

namespace {

// c_name is a generated constant and a schema lives as long as its op:
// the pair of addresses names a binding without building a string.
struct BindingKey {
	const char *c_name;
	const c10::FunctionSchema *schema;
	bool operator==(const BindingKey &o) const
	{
		return c_name == o.c_name && schema == o.schema;
	}
};

struct BindingKeyHash {
	size_t operator()(const BindingKey &k) const
	{
		return std::hash<const void *>()(k.c_name) * 31 ^
		       std::hash<const void *>()(k.schema);
	}
};

} // namespace

static const Binding &binding(const char *c_name, const c10::OperatorHandle &op)
{
	static std::mutex lock;
	static std::unordered_map<BindingKey, Binding, BindingKeyHash> cache;
	BindingKey key{ c_name, &op.schema() };
	std::lock_guard<std::mutex> g(lock);
	auto it = cache.find(key);

	if (it != cache.end())
		return it->second;
	Binding b;
	b.op = vnpu_op_find(c_name);
	TORCH_CHECK(b.op, "torch_vnpu: the dispatcher has no operator ", c_name);
	const struct vnpu_schema *cs = vnpu_op_schema(b.op);
	const auto &targs = op.schema().arguments();
	std::vector<bool> used(targs.size());
	for (uint32_t i = 0; i < cs->nargs; i++) {
		int found = -1;

		for (size_t j = 0; j < targs.size(); j++)
			if (targs[j].name() == cs->args[i].name)
				found = (int)j;
		TORCH_CHECK(found >= 0, "torch_vnpu: ", c_name, " argument '",
			    cs->args[i].name, "' is not in PyTorch's schema ",
			    op.schema());
		b.torch_index.push_back(found);
		used[found] = true;
	}
	for (size_t j = 0; j < targs.size(); j++)
		if (!used[j] && targs[j].alias_info() &&
		    targs[j].alias_info()->isWrite())
			b.targets.push_back((int)j);
	b.facts = op_facts(c_name);
	b.is_copy = b.facts.any_dtype == OpFacts::ANY_COPY;
	return cache.emplace(key, std::move(b)).first->second;
}

// After a kernel ran on argument t: if it replaced the dispatcher
// tensor's storage (resize_, a format cast in place), the PyTorch storage
// takes the new one, so every view of it sees the new bytes.
static void write_back(const at::Tensor &t, struct vnpu_at_tensor *c)
{
	if (t.device().type() != kNpu) {
		// CPU tensors are wrapped at their first element (offset 0),
		// not owned: their memory stays
		TORCH_CHECK(vnpu_at_data(c) == t.data_ptr() &&
				    same_sizes_strides(t, c),
			    "torch_vnpu: an npu kernel resized a CPU tensor argument");
		return;
	}
	if (storage_of(t.storage()) != c->storage) {
		c10::Storage st = t.storage();
		c10::Storage fresh = wrap_storage(c->storage);
		st.set_data_ptr_noswap(std::move(fresh.unsafeGetStorageImpl()->mutable_data_ptr()));
		st.set_nbytes(c->storage->nbytes);
	}
	if (!same_geometry(t, c))
		set_geometry(t, c);
}

static c10::IValue ret_from_c(const char *c_name, struct vnpu_ivalue *v,
			      InputRefs inputs)
{
	switch (v->tag) {
	case VNPU_IV_NONE:
		// a Tensor return left undefined (a gradient output_mask did
		// not ask for); Python sees None
		return at::Tensor();
	case VNPU_IV_TENSOR:
		return from_c(v->t, inputs);
	case VNPU_IV_TENSOR_LIST: {
		std::vector<at::Tensor> l;
		for (int64_t j = 0; j < v->tl->n; j++)
			l.push_back(from_c(v->tl->v[j], inputs));
		return l;
	}
	case VNPU_IV_INT:
		return v->i;
	case VNPU_IV_DOUBLE:
		return v->d;
	case VNPU_IV_BOOL:
		return v->b;
	}
	TORCH_CHECK(false, "torch_vnpu: ", c_name, ": unsupported return value");
}

// PyTorch's default dtype (torch.set_default_dtype) decides float
// factories and int-to-float promotion in the kernels too.
static void follow_default_dtype()
{
	enum vnpu_at_dtype def;

	if (dtype_to_c(c10::get_default_dtype_as_scalartype(), &def) &&
	    def != vnpu_at_default_dtype())
		vnpu_at_set_default_dtype(def);
}

// Runs the dispatcher's kernel for key PrivateUse1 (or CPU) on the
// stack; false when it deferred the op to the CPU fallback.
static bool run_dispatcher_kernel(const char *c_name, const struct vnpu_op *op,
				  bool cpu, struct vnpu_stack *s)
{
	bool ok;

	{
		FallbackDeferral d;

		ok = vnpu_redispatch_boxed(
			op, vnpu_keyset_of(cpu ? VNPU_KEY_CPU : VNPU_KEY_PRIVATEUSE1), s);
	}
	if (ok)
		return true;
	if (vnpu_at_error_code() == VNPU_AT_ERR_FALLBACK_DEFERRED) {
		vnpu_at_error_clear();
		return false;
	}
	throw_dispatch_error(c_name);
}

// Runs the dispatcher's kernel c_name on the arguments of op on the
// stack (left there); false when the op must run on the CPU instead.
static bool invoke(const char *c_name, const Binding &b,
		   const c10::OperatorHandle &op, c10::DispatchKeySet ks,
		   torch::jit::Stack *stack, std::vector<c10::IValue> &rets)
{
	const struct vnpu_schema *cs = vnpu_op_schema(b.op);
	const auto &tschema = op.schema();
	size_t n = tschema.arguments().size(), base = stack->size() - n;
	std::vector<at::Tensor> inputs;
	std::vector<struct vnpu_at_tensor *> arg_c(cs->nargs, nullptr);
	CTensors owned;
	CStack cst;

	follow_default_dtype();
	try {
		for (size_t j = 0; j < n; j++) {
			const c10::IValue &v = (*stack)[base + j];
			bool ours = false;

			for (int ti : b.torch_index)
				ours |= (size_t)ti == j;
			for (int ti : b.targets)
				ours |= (size_t)ti == j;
			if (!ours)
				check_torch_only(tschema.arguments()[j].name(), v);
			if (v.isTensor())
				inputs.push_back(v.toTensor());
			else if (v.isTensorList())
				for (const at::Tensor &t : v.toTensorVector())
					inputs.push_back(t);
		}
		for (uint32_t i = 0; i < cs->nargs; i++)
			arg_c[i] = push_arg(&cst.s, &cs->args[i],
					    (*stack)[base + b.torch_index[i]], owned);
	} catch (const Unrepresentable &) {
		return false;
	}

	bool cpu = ks.has(c10::DispatchKey::CPU) &&
		   !ks.has(c10::DispatchKey::PrivateUse1);
	if (!run_dispatcher_kernel(c_name, b.op, cpu, &cst.s))
		return false;

	// a kernel that changed a tensor argument's storage or geometry
	// (resize_, _copy_from_and_resize, a cast in place): PyTorch's
	// tensor follows
	for (uint32_t i = 0; i < cs->nargs; i++)
		if (arg_c[i]) {
			at::Tensor t = (*stack)[base + b.torch_index[i]].toTensor();
			write_back(t, arg_c[i]);
		}
	c10::SmallVector<const at::Tensor *, 8> input_refs;
	for (const at::Tensor &t : inputs)
		input_refs.push_back(&t);
	for (uint32_t r = 0; r < cs->nrets; r++) {
		const struct vnpu_schema_arg *ra = &cs->rets[r];

		if (ra->is_write) {
			c10::IValue same;
			for (uint32_t i = 0; i < cs->nargs; i++)
				if (cs->args[i].is_write &&
				    cs->args[i].alias_set == ra->alias_set)
					same = (*stack)[base + b.torch_index[i]];
			TORCH_CHECK(!same.isNone(), "torch_vnpu: ", c_name,
				    ": no argument for written return ", r);
			rets.push_back(same);
			continue;
		}
		rets.push_back(ret_from_c(c_name, &cst.s.v[r], input_refs));
	}
	return true;
}

// ---- typed calls (typed_call.h) --------------------------------------------

c10::OperatorHandle torch_op(const char *name, const char *overload)
{
	return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

TypedCall::~TypedCall()
{
	for (auto *t : owned_)
		vnpu_at_release(t);
}

bool TypedCall::tensor(const at::Tensor &t, struct vnpu_at_tensor **out)
{
	*out = nullptr;
	if (!t.defined())
		return true;
	try {
		*out = to_c(t);
	} catch (const Unrepresentable &) {
		return false;
	}
	owned_.push_back(*out);
	inputs_.push_back(&t);
	return true;
}

bool TypedCall::in(const at::Tensor &t, struct vnpu_at_tensor **out)
{
	return tensor(t, out);
}

bool TypedCall::in(const std::optional<at::Tensor> &t, struct vnpu_at_tensor **out)
{
	if (!t.has_value()) {
		*out = nullptr;
		return true;
	}
	return tensor(*t, out);
}

bool TypedCall::in(const c10::List<std::optional<at::Tensor>> &v,
		   struct vnpu_at_tensor_list *out)
{
	auto &l = lists_.emplace_back(v.size());

	for (size_t i = 0; i < v.size(); i++) {
		std::optional<at::Tensor> t = v.get(i);

		// held by the call: a result may share its storage
		if (t.has_value() && t->defined() &&
		    !tensor(held_.emplace_back(std::move(*t)), &l[i]))
			return false;
	}
	*out = { l.data(), (int64_t)l.size() };
	return true;
}

bool TypedCall::in(const at::Scalar &v, struct vnpu_at_scalar *out)
{
	try {
		*out = scalar_to_c(v);
	} catch (const Unrepresentable &) {
		return false;
	}
	return true;
}

bool TypedCall::in(const std::optional<at::Scalar> &v, struct vnpu_at_scalar *out)
{
	if (!v.has_value()) {
		*out = {};
		out->kind = VNPU_AT_SCALAR_NONE;
		return true;
	}
	return in(*v, out);
}

bool TypedCall::in(int64_t v, int64_t *out)
{
	*out = v;
	return true;
}

bool TypedCall::in(c10::SymInt v, int64_t *out)
{
	*out = v.expect_int();
	return true;
}

bool TypedCall::in(std::optional<int64_t> v, struct vnpu_at_opt_int *out)
{
	*out = { v.has_value(), v.value_or(0) };
	return true;
}

bool TypedCall::in(std::optional<c10::SymInt> v, struct vnpu_at_opt_int *out)
{
	*out = { v.has_value(), v.has_value() ? v->expect_int() : 0 };
	return true;
}

bool TypedCall::in(double v, double *out)
{
	*out = v;
	return true;
}

bool TypedCall::in(std::optional<double> v, struct vnpu_at_opt_double *out)
{
	*out = { v.has_value(), v.value_or(0.0) };
	return true;
}

bool TypedCall::in(bool v, bool *out)
{
	*out = v;
	return true;
}

bool TypedCall::in(c10::IntArrayRef v, struct vnpu_at_int_array *out)
{
	*out = { v.data(), (int64_t)v.size() };
	return true;
}

bool TypedCall::in(c10::SymIntArrayRef v, struct vnpu_at_int_array *out)
{
	return in(C10_AS_INTARRAYREF_SLOW(v), out);
}

bool TypedCall::in(at::OptionalIntArrayRef v, struct vnpu_at_opt_int_array *out)
{
	out->has = v.has_value();
	out->a = { nullptr, 0 };
	return !v.has_value() || in(*v, &out->a);
}

bool TypedCall::in(at::OptionalSymIntArrayRef v, struct vnpu_at_opt_int_array *out)
{
	out->has = v.has_value();
	out->a = { nullptr, 0 };
	return !v.has_value() || in(*v, &out->a);
}

bool TypedCall::in(at::ScalarType v, enum vnpu_at_dtype *out)
{
	return dtype_to_c(v, out);
}

bool TypedCall::in(std::optional<at::ScalarType> v, enum vnpu_at_dtype *out)
{
	if (!v.has_value()) {
		*out = VNPU_AT_DTYPE_NONE;
		return true;
	}
	return in(*v, out);
}

bool TypedCall::in(std::optional<at::Device> v, struct vnpu_at_device *out)
{
	try {
		*out = device_to_c(v);
	} catch (const Unrepresentable &) {
		return false;
	}
	return true;
}

bool TypedCall::in(c10::string_view v, const char **out)
{
	// the dispatcher's strings end at their first NUL: a value with one
	// inside is PyTorch's kernel's to judge ("tanh\0x" is not "tanh")
	if (std::memchr(v.data(), 0, v.size()))
		return false;
	*out = strings_.emplace_back(v.data(), v.size()).c_str();
	return true;
}

bool TypedCall::shape(c10::IntArrayRef v, struct vnpu_at_int_array *out)
{
	return v.size() <= VNPU_AT_MAX_DIMS && in(v, out);
}

bool TypedCall::shape(c10::SymIntArrayRef v, struct vnpu_at_int_array *out)
{
	return shape(C10_AS_INTARRAYREF_SLOW(v), out);
}

bool TypedCall::torch_only(const char *name, const c10::IValue &v)
{
	try {
		check_torch_only(name, v);
	} catch (const Unrepresentable &) {
		return false;
	}
	return true;
}

void TypedCall::begin()
{
	follow_default_dtype();
	// a pending error is an earlier call's, already thrown: what is
	// pending after the kernel is this call's
	vnpu_at_error_clear();
}

bool TypedCall::finished()
{
	enum vnpu_at_error code = vnpu_at_error_code();

	if (code == VNPU_AT_OK) {
		// a kernel that replaced an argument's storage or geometry
		// (_copy_from_and_resize): PyTorch's tensor follows. The
		// arguments' dispatcher tensors lead owned_, in order.
		for (size_t i = 0; i < inputs_.size(); i++)
			write_back(*inputs_[i], owned_[i]);
		return true;
	}
	if (code == VNPU_AT_ERR_FALLBACK_DEFERRED) {
		vnpu_at_error_clear();
		return false;
	}
	throw_dispatch_error(c_name_);
}

void TypedCall::keep(struct vnpu_at_tensor *t)
{
	if (t)
		owned_.push_back(t);
}

at::Tensor TypedCall::out(struct vnpu_at_tensor *t)
{
	if (!t)
		return at::Tensor();
	return from_c(t, InputRefs(inputs_.data(), inputs_.size()));
}

at::Scalar TypedCall::out(struct vnpu_at_scalar v)
{
	switch (v.kind) {
	case VNPU_AT_SCALAR_INT:
		return v.i;
	case VNPU_AT_SCALAR_DOUBLE:
		return v.d;
	case VNPU_AT_SCALAR_BOOL:
		return v.b;
	case VNPU_AT_SCALAR_NONE:
		break;
	}
	TORCH_CHECK(false, "torch_vnpu: a kernel returned no scalar");
}

static void replace_args(torch::jit::Stack *stack, size_t n,
			 std::vector<c10::IValue> &rets)
{
	torch::jit::drop(*stack, n);
	for (auto &r : rets)
		stack->push_back(std::move(r));
}

// resize_ of an npu tensor of any dtype: a larger storage when needed
// (the old bytes copied on the device), contiguous sizes.
static void resize_any_dtype(at::Tensor &self, const std::vector<int64_t> &size)
{
	int64_t numel = 1;

	for (int64_t d : size) {
		TORCH_CHECK(d >= 0, "Trying to create tensor with negative dimension ",
			    d, ": ", c10::IntArrayRef(size));
		TORCH_CHECK(!d || numel <= INT64_MAX / d, "resize_: size overflows");
		numel *= d;
	}
	uint64_t need = 0;
	TORCH_CHECK(!numel || !__builtin_mul_overflow(
				(uint64_t)(numel + self.storage_offset()),
				(uint64_t)self.itemsize(), &need),
		    "resize_: size overflows");
	c10::Storage st = self.storage();
	struct vnpu_at_storage *old = storage_of(st);
	TORCH_CHECK(old, "resize_: expected an npu storage of torch_vnpu");
	TORCH_CHECK(old->npu.npu_format == 2 /* ND */ || need <= st.nbytes(),
		    "resize_: not supported for internal formats");
	if (need > st.nbytes()) {
		c10::DataPtr fresh = npu_allocator()->allocate(need);
		if (st.nbytes() &&
		    vnpu_memcpy(fresh.get(), st.data(), st.nbytes(),
				VNPU_MEMCPY_D2D) != VNPU_SUCCESS)
			TORCH_CHECK(false, "resize_: device copy: ",
				    vnpu_last_error_detail());
		st.set_data_ptr_noswap(std::move(fresh));
		st.set_nbytes(need);
	}
	self.unsafeGetTensorImpl()->set_sizes_contiguous(size);
}

// Allocation and copies are the same for every dtype: where the
// dispatcher lacks the dtype (complex), they run here instead of
// the CPU fallback (which itself allocates and copies on the npu).
// Which op is which: the yaml's any_dtype.
static bool dtype_agnostic(const char *c_name, const c10::OperatorHandle &op,
			   torch::jit::Stack *stack)
{
	const OpFacts::AnyDtype kind = op_facts(c_name).any_dtype;
	size_t n = op.schema().arguments().size(), base = stack->size() - n;
	auto arg = [&](size_t i) -> c10::IValue & { return (*stack)[base + i]; };
	at::Tensor result;

	if (kind == OpFacts::ANY_EMPTY || kind == OpFacts::ANY_EMPTY_STRIDED) {
		bool strided = kind == OpFacts::ANY_EMPTY_STRIDED;
		size_t o = strided ? 1 : 0;
		std::vector<int64_t> size = int_list(arg(0));
		auto dtype = arg(o + 1).isNone() ? c10::typeMetaToScalarType(
				     c10::get_default_dtype()) : arg(o + 1).toScalarType();
		c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);

		c10::optional<c10::DeviceGuard> on;
		if (!arg(o + 3).isNone() && arg(o + 3).toDevice().has_index())
			on.emplace(arg(o + 3).toDevice());
		if (strided) {
			std::vector<int64_t> stride = int_list(arg(1));
			result = at::detail::empty_strided_generic(size, stride,
				npu_allocator(), ks, dtype);
		} else {
			auto mf = arg(5).isNone() ? c10::nullopt :
				c10::make_optional(arg(5).toMemoryFormat());
			result = at::detail::empty_generic(size, npu_allocator(), ks,
							   dtype, mf);
		}
	} else if (kind == OpFacts::ANY_RESIZE) {
		result = arg(0).toTensor();
		resize_any_dtype(result, int_list(arg(1)));
	} else if (kind == OpFacts::ANY_COPY) {
		copy_any_dtype(arg(0).toTensor(), arg(1).toTensor());
		result = arg(0).toTensor();
	} else if (kind == OpFacts::ANY_COPY_FROM) {
		copy_any_dtype(arg(1).toTensor(), arg(0).toTensor());
		result = arg(1).toTensor();
	} else if (kind == OpFacts::ANY_COPY_FROM_AND_RESIZE) {
		at::Tensor dst = arg(1).toTensor();
		if (dst.sizes() != arg(0).toTensor().sizes())
			dst.resize_(arg(0).toTensor().sizes());
		copy_any_dtype(dst, arg(0).toTensor());
		result = dst;
	} else {
		return false;
	}
	torch::jit::drop(*stack, n);
	stack->push_back(result);
	return true;
}

void leave_to_cpu(const char *c_name, const c10::OperatorHandle &op,
		  torch::jit::Stack *stack)
{
	if (!dtype_agnostic(c_name, op, stack))
		cpu_fallback(op, stack);
}

void run_npu_kernel(const char *c_name, const c10::OperatorHandle &op,
		    c10::DispatchKeySet ks, torch::jit::Stack *stack)
{
	const Binding &b = binding(c_name, op);
	std::vector<c10::IValue> rets;

	TORCH_CHECK(vnpu_op_schema(b.op)->nrets == op.schema().returns().size(),
		    "torch_vnpu: ", c_name, " and ", op.schema(),
		    " return different numbers of values");
	if (b.is_copy) {
		// PyTorch's copy_ (TensorIterator): a copy onto itself is
		// done, one between partly overlapping tensors refused
		size_t base = stack->size() - op.schema().arguments().size();
		at::Tensor dst = (*stack)[base].toTensor();
		const at::Tensor &src = (*stack)[base + 1].toTensor();

		if (dst.is_same(src)) {
			rets.emplace_back(dst);
			replace_args(stack, op.schema().arguments().size(), rets);
			return;
		}
		at::assert_no_internal_overlap(dst);
		at::assert_no_partial_overlap(dst, src);
	}
	if (!invoke(c_name, b, op, ks, stack, rets)) {
		leave_to_cpu(c_name, op, stack);
		return;
	}
	replace_args(stack, op.schema().arguments().size(), rets);
}

void run_npu_uninitialized(const char *c_name, const c10::OperatorHandle &op,
			   c10::DispatchKeySet ks, torch::jit::Stack *stack)
{
	const auto &ctx = at::globalContext();

	if (!ctx.deterministicAlgorithms() ||
	    !ctx.deterministicFillUninitializedMemory()) {
		run_npu_kernel(c_name, op, ks, stack);
		return;
	}
	// a resize_ (self written) fills only the bytes its storage gained
	const auto &args = op.schema().arguments();
	int64_t old_nbytes = -1;
	if (!args.empty() && args[0].alias_info() &&
	    args[0].alias_info()->isWrite()) {
		const c10::IValue &self = (*stack)[stack->size() - args.size()];

		if (self.isTensor())
			old_nbytes = (int64_t)self.toTensor().storage().nbytes();
	}
	run_npu_kernel(c_name, op, ks, stack);
	at::Tensor result = stack->back().toTensor();
	if (old_nbytes < 0)
		at::native::fill_empty_deterministic_(result);
	else
		at::native::fill_resize_deterministic_(result, old_nbytes);
}

// What PyTorch's structured kernels check before writing a result into
// an existing tensor (TensorIterator's cast and shape rules).
static void check_target(const char *what, const at::Tensor &target,
			 const at::Tensor &result, bool may_resize)
{
	TORCH_CHECK(may_resize || target.sizes() == result.sizes(),
		    "output with shape ", target.sizes(),
		    " doesn't match the broadcast shape ", result.sizes());
	TORCH_CHECK(c10::canCast(result.scalar_type(), target.scalar_type()),
		    "result type ", result.scalar_type(),
		    " can't be cast to the desired output type ",
		    target.scalar_type());
	// TensorIterator: an out= on another device than its inputs
	TORCH_CHECK(target.device() == result.device(),
		    "Expected all tensors to be on the same device, but found at least two devices, ",
		    result.device(), " and ", target.device(), "! (", what, " out=)");
}

// PyTorch's name of an op in its messages: "all" of "aten::all.dim". Only
// built when a check fails (TORCH_CHECK evaluates its message lazily).
static std::string torch_name(const char *c_name)
{
	std::string name = c_name;

	name = name.substr(name.find("::") + 2);
	return name.substr(0, name.find('.'));
}

// No input partly overwritten while it is read (TensorIterator's
// check_mem_overlap), none at all where the op's kernel says so
// (out_no_overlap). target_args: the written arguments' positions.
static void check_overlap(const Binding &b, const torch::jit::Stack *stack,
			  size_t base, size_t n, const std::vector<int> &target_args,
			  const std::vector<at::Tensor> &targets)
{
	for (size_t j = 0; j < n; j++) {
		const c10::IValue &v = (*stack)[base + j];

		if (std::find(target_args.begin(), target_args.end(), (int)j) !=
		    target_args.end())
			continue;
		auto check = [&](const at::Tensor &in) {
			if (!in.defined())
				return;
			for (const at::Tensor &t : targets) {
				if (b.facts.out_no_overlap)
					at::assert_no_overlap(t, in);
				else
					at::assert_no_partial_overlap(t, in);
			}
		};
		if (v.isTensor())
			check(v.toTensor());
		else if (v.isTensorList())
			for (const at::Tensor &e : v.toTensorVector())
				check(e);
	}
}

// What PyTorch checks of the tensors an in-place or out= variant writes
// (one whose elements share memory has gone to the CPU kernel): their
// dtypes, their overlap with the inputs (check_overlap), and what the
// op's own kernel adds (Binding). target_args: the written arguments'
// positions.
static void check_aliasing(const char *c_name, const Binding &b,
			   const torch::jit::Stack *stack,
			   size_t base, size_t n, const std::vector<int> &target_args,
			   const std::vector<at::Tensor> &targets, bool out)
{
	const at::ScalarType in_dt = (*stack)[base].isTensor() ?
					     (*stack)[base].toTensor().scalar_type() :
					     at::kFloat;

	if (out && b.facts.out_dtype == OpFacts::OUT_BOOLEAN)
		TORCH_CHECK(targets[0].scalar_type() == at::kBool, torch_name(c_name),
			    " does not support non-boolean outputs.");
	if (out && b.facts.out_dtype == OpFacts::OUT_BYTEBOOL)
		TORCH_CHECK(targets[0].scalar_type() == at::kBool ||
				    targets[0].scalar_type() == at::kByte,
			    torch_name(c_name), " only supports bool tensor for result, got: ",
			    targets[0].scalar_type());
	if (out && b.facts.out_dtype == OpFacts::OUT_SELF_RESULT)
		TORCH_CHECK(in_dt == targets[0].scalar_type(), torch_name(c_name),
			    "(): self and result must have the same scalar type");
	if (out && b.facts.out_dtype == OpFacts::OUT_SELF_TYPEMETA)
		TORCH_CHECK(in_dt == targets[0].scalar_type(), "Expected out tensor to have dtype ",
			    c10::scalarTypeToTypeMeta(in_dt), ", but got ", targets[0].dtype(),
			    " instead");
	if (out && b.facts.out_dtype == OpFacts::OUT_INPUT)
		TORCH_CHECK(in_dt == targets[0].scalar_type(),
			    "Expected the dtype for input and out to match, but got ",
			    in_dt, " for input's dtype and ",
			    targets[0].scalar_type(), " for out's dtype.");
	if (out && b.facts.out_dtype == OpFacts::OUT_UNARY)
		TORCH_CHECK(in_dt == targets[0].scalar_type(), "Found dtype ",
			    targets[0].scalar_type(), " but expected ", in_dt);
	if (out && b.facts.out_dtype == OpFacts::OUT_VALUES_INDICES) {
		TORCH_CHECK(targets[0].scalar_type() == in_dt,
			    "Expected out tensor to have dtype ", in_dt,
			    ", but got ", targets[0].scalar_type(), " instead");
		TORCH_CHECK(targets.size() < 2 ||
				    targets[1].scalar_type() == at::kLong,
			    "Expected out tensor to have dtype ", at::kLong,
			    ", but got ", targets[1].scalar_type(), " instead");
	}
	check_overlap(b, stack, base, n, target_args, targets);
}

// TensorIterator resizes an out= only when it is not also one of the
// op's inputs (its is_read_write operands): torch.add(x, y, out=x) with a
// broadcast shape other than x's is refused, whatever x's numel.
static void check_out_is_input(const torch::jit::Stack *stack, size_t base,
			       size_t n, const std::vector<int> &target_args,
			       const at::Tensor &target, const at::Tensor &result)
{
	if (target.sizes() == result.sizes())
		return;
	for (size_t j = 0; j < n; j++) {
		const c10::IValue &v = (*stack)[base + j];

		if (std::find(target_args.begin(), target_args.end(), (int)j) ==
			    target_args.end() &&
		    v.isTensor() && v.toTensor().is_same(target))
			TORCH_CHECK(false, "output with shape ", target.sizes(),
				    " doesn't match the broadcast shape ",
				    result.sizes());
	}
}

void run_npu_variant(const char *c_name, const c10::OperatorHandle &op,
		     c10::DispatchKeySet ks, torch::jit::Stack *stack,
		     bool tensor_iterator)
{
	const Binding &b = binding(c_name, op);
	const auto &targs = op.schema().arguments();
	size_t n = targs.size(), base = stack->size() - n;
	std::vector<c10::IValue> rets;
	std::vector<at::Tensor> targets;

	// in place: self is the target; out=: the written args we don't pass
	if (b.targets.empty()) {
		TORCH_CHECK(targs[0].alias_info() && targs[0].alias_info()->isWrite(),
			    "torch_vnpu: ", op.schema(), " is not an in-place variant of ",
			    c_name);
		targets.push_back((*stack)[base].toTensor());
	} else {
		for (int ti : b.targets)
			targets.push_back((*stack)[base + ti].toTensor());
	}
	// a target whose elements share memory (expand()ed): what happens
	// is the op's own kernel's (TensorIterator's refuse it, masked_fill_
	// warns and writes each masked element), so PyTorch's CPU kernel runs
	bool overlapping = std::any_of(targets.begin(), targets.end(), [](const at::Tensor &t) {
		return at::has_internal_overlap(t) == at::MemOverlap::Yes;
	});
	bool out = !b.targets.empty();
	// sum(x, out=o) is sum(x, dtype=o.dtype): PyTorch's meta function
	// takes the out='s dtype as the one the op computes in
	// (mean's: a floating out='s; it divides an integral one in place,
	// which the cast rule below refuses)
	bool computes_in_out =
		b.facts.out_dtype == OpFacts::OUT_DTYPE_ARG ||
		(b.facts.out_dtype == OpFacts::OUT_DTYPE_ARG_FLOATING &&
		 (at::isFloatingType(targets[0].scalar_type()) ||
		  at::isComplexType(targets[0].scalar_type())));
	if (out && computes_in_out)
		for (size_t j = 0; j < n; j++)
			if (targs[j].name() == "dtype" && (*stack)[base + j].isNone())
				(*stack)[base + j] = targets[0].scalar_type();
	if (overlapping || targets.size() != vnpu_op_schema(b.op)->nrets ||
	    !invoke(c_name, b, op, ks, stack, rets)) {
		cpu_fallback(op, stack);
		return;
	}
	// where.self_out: the out= must have the result's dtype, no cast
	if (out && b.facts.out_dtype == OpFacts::OUT_RESULT)
		TORCH_CHECK(targets[0].scalar_type() == rets[0].toTensor().scalar_type(),
			    "Expected out type to be ", rets[0].toTensor().scalar_type(),
			    " but got ", targets[0].scalar_type());
	// nonzero's out= is int64, in its words
	if (out && b.facts.out_dtype == OpFacts::OUT_LONG)
		TORCH_CHECK(targets[0].scalar_type() == at::kLong, torch_name(c_name),
			    ": Expected out tensor to have scalar type Long but got scalar type",
			    targets[0].scalar_type());
	// a structured kernel's out= has its result's dtype, exactly
	if (out && b.facts.out_dtype == OpFacts::OUT_RESULT_TYPEMETA)
		TORCH_CHECK(targets[0].scalar_type() == rets[0].toTensor().scalar_type(),
			    "Expected out tensor to have dtype ", rets[0].toTensor().dtype(),
			    ", but got ", targets[0].dtype(), " instead");
	// a structured reduction's out= has the dtype= it was given, exactly
	if (out && (b.facts.out_dtype == OpFacts::OUT_DTYPE_ARG ||
		    b.facts.out_dtype == OpFacts::OUT_DTYPE_ARG_FLOATING)) {
		const auto &args = op.schema().arguments();

		for (size_t j = 0; j < args.size() && j < n; j++)
			if (args[j].name() == "dtype" && !(*stack)[base + j].isNone())
				TORCH_CHECK(targets[0].scalar_type() ==
						    (*stack)[base + j].toScalarType(),
					    "Expected out tensor to have dtype ",
					    c10::scalarTypeToTypeMeta((*stack)[base + j].toScalarType()),
					    ", but got ", targets[0].dtype(), " instead");
	}
	check_aliasing(c_name, b, stack, base, n,
		       out ? b.targets : std::vector<int>{ 0 }, targets, out);
	for (size_t i = 0; out && tensor_iterator && i < targets.size(); i++)
		check_out_is_input(stack, base, n, b.targets, targets[i],
				   rets[i].toTensor());
	// addbmm_ is PyTorch's addbmm.out onto self, which resizes with
	// resize_: self takes the result's shape, an out= too, silently
	bool resizes = out || b.facts.silent_resize, resized = false;
	for (size_t i = 0; i < targets.size(); i++) {
		at::Tensor r = rets[i].toTensor();

		check_target(c_name, targets[i], r, resizes);
		if (resizes && targets[i].sizes() != r.sizes()) {
			resized = true;
			if (out && !b.facts.silent_resize && targets[i].numel())
				TORCH_WARN("An output with one or more elements was resized since it had shape ",
					   targets[i].sizes(), ", which does not match the required output shape ",
					   r.sizes(), ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).");
			targets[i].resize_(r.sizes());
			// TensorIterator lays a resized out= out as its
			// result: in the inputs' dim order (strides
			// permuted), not contiguous
			if (tensor_iterator && r.is_non_overlapping_and_dense())
				targets[i].as_strided_(r.sizes(), r.strides());
		}
	}
	// a structured kernel other than TensorIterator checks overlap after
	// its meta function resized the out= (gather(x, 0, i[1:], out=i[:1]))
	if (resized && !tensor_iterator)
		check_overlap(b, stack, base, n,
			      out ? b.targets : std::vector<int>{ 0 }, targets);
	for (size_t i = 0; i < targets.size(); i++)
		targets[i].copy_(rets[i].toTensor());
	std::vector<c10::IValue> outs(targets.begin(), targets.end());
	replace_args(stack, n, outs);
}

// BackendSelect for the npu:: factory ops (they have no tensor argument).
void npu_backend_select(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	// npu:: factories make npu tensors: the kernel judges the device
	op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
			   stack);
}

} // namespace torch_vnpu
