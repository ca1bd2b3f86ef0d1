// SPDX-License-Identifier: MIT
// Kernels that only touch tensor metadata. The
// view kernels are PyTorch's own device-generic ones (as the dispatcher's
// views are one kernel for every backend); PyTorch registers them for
// CPU and CUDA only, so a backend registers them for itself.
#include "backend.h"

#include <ATen/NativeFunctions.h>
#include <torch/library.h>

#include "vnpu_runtime.h"

namespace torch_vnpu {

static at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size)
{
	return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

static at::Tensor as_strided(const at::Tensor &self, c10::SymIntArrayRef size,
			     c10::SymIntArrayRef stride,
			     c10::optional<c10::SymInt> offset)
{
	return at::native::as_strided_tensorimpl(
		self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
		offset ? c10::make_optional(offset->expect_int()) : c10::nullopt);
}

static at::Tensor reshape_alias(const at::Tensor &self, c10::SymIntArrayRef size,
				c10::SymIntArrayRef stride)
{
	return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
					  C10_AS_INTARRAYREF_SLOW(stride));
}

static at::Tensor unfold(const at::Tensor &self, int64_t dim, int64_t size,
			 int64_t step)
{
	return at::native::unfold(self, dim, size, step);
}

// A complex tensor's storage seen as (real, imag) pairs and back: the
// same bytes, so writes through x.real and x.imag reach x.
static at::Tensor view_as_real(const at::Tensor &self)
{
	return at::native::view_as_real(self);
}

static at::Tensor view_as_complex(const at::Tensor &self)
{
	return at::native::view_as_complex(self);
}

// set_: self takes another storage of its device (or tensor's storage)
// with new geometry; the geometry must fit in that storage. The storage
// may be one torch_vnpu did not allocate (a byte slice of an npu
// storage): kernels then borrow its memory (acquire_storage).
static at::Tensor &set_storage(at::Tensor &self, at::Storage source,
			       c10::SymInt offset, c10::SymIntArrayRef size,
			       c10::SymIntArrayRef stride)
{
	TORCH_CHECK(source.device() == self.device(),
		    "Attempted to set the storage of a tensor on device \"",
		    self.device(), "\" to a storage on different device \"",
		    source.device(),
		    "\".  This is no longer allowed; the devices must match.");
	auto sz = C10_AS_INTARRAYREF_SLOW(size);
	c10::DimVector st = stride.empty() ?
		c10::contiguous_strides(sz) :
		c10::DimVector(C10_AS_INTARRAYREF_SLOW(stride));
	TORCH_CHECK(sz.size() == st.size(), "set_: ", sz.size(),
		    " sizes and ", st.size(), " strides");
	int64_t off = offset.expect_int();
	TORCH_CHECK(off >= 0, "set_: negative storage offset ", off);
	int64_t last = 0;
	bool empty = false;
	for (size_t i = 0; i < sz.size(); i++) {
		TORCH_CHECK(sz[i] >= 0 && st[i] >= 0, "set_: negative size or stride");
		empty |= sz[i] == 0;
		last += (sz[i] - 1) * st[i];
	}
	size_t need = empty ? 0 : (size_t)(off + last + 1) * self.itemsize();
	TORCH_CHECK(need <= source.nbytes(), "set_: the geometry needs ", need,
		    " bytes, the storage has ", source.nbytes());
	self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
	self.unsafeGetTensorImpl()->set_sizes_and_strides(sz, st, off);
	return self;
}

static at::Tensor &set_source_storage(at::Tensor &self, at::Storage source)
{
	int64_t n = (int64_t)(source.nbytes() / self.itemsize());
	c10::SymInt sn(n);

	return set_storage(self, std::move(source), c10::SymInt(0),
			   c10::SymIntArrayRef(&sn, 1), {});
}

static at::Tensor &set_source_tensor(at::Tensor &self, const at::Tensor &src)
{
	TORCH_CHECK(self.dtype() == src.dtype(), "set_: dtypes differ");
	if (self.is_same(src))
		return self;
	return set_storage(self, src.storage(), c10::SymInt(src.storage_offset()),
			   src.sym_sizes(), src.sym_strides());
}

static at::Tensor &set_empty(at::Tensor &self)
{
	at::Storage s(at::Storage::use_byte_size_t(), 0, npu_allocator(), true);
	c10::SymInt z(0);

	return set_storage(self, std::move(s), c10::SymInt(0),
			   c10::SymIntArrayRef(&z, 1), {});
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("view", TORCH_FN(view));
	m.impl("as_strided", TORCH_FN(as_strided));
	m.impl("_reshape_alias", TORCH_FN(reshape_alias));
	m.impl("unfold", TORCH_FN(unfold));
	m.impl("view_as_real", TORCH_FN(view_as_real));
	m.impl("view_as_complex", TORCH_FN(view_as_complex));
	m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
	m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
	m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
	m.impl("set_", TORCH_FN(set_empty));
}

} // namespace torch_vnpu
