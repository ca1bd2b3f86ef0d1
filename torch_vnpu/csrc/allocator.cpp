// SPDX-License-Identifier: MIT
// npu memory for PyTorch: each storage is a dispatcher storage (the
// caching device allocator over libvnpurt, storage.c). The DataPtr's
// pointer is a device VA, never dereferenced on the host; its context is
// the dispatcher storage, which carries the NPU format descriptor.
#include "backend.h"

#include "vnpu_runtime.h"

namespace torch_vnpu {

static void release_storage(void *ctx)
{
	vnpu_at_storage_release(static_cast<struct vnpu_at_storage *>(ctx));
}

namespace {

struct NpuAllocator final : c10::Allocator {
	c10::DataPtr allocate(size_t nbytes) override
	{
		int dev = current_device();
		struct vnpu_at_storage *s = vnpu_at_npu_storage_new(nbytes);

		if (!s)
			throw_dispatch_error("torch_vnpu: allocate");
		return { s->data, s, &release_storage,
			 c10::Device(kNpu, (c10::DeviceIndex)dev) };
	}
	c10::DeleterFnPtr raw_deleter() const override
	{
		return nullptr;
	}
	// Storage copies (clone of a storage, deepcopy): device to device,
	// ordered after the thread's current stream's work.
	void copy_data(void *dest, const void *src, size_t count) const override
	{
		if (!count)
			return;
		if (!vnpu_at_npu_synchronize())
			throw_dispatch_error("torch_vnpu: storage copy");
		vnpu_error_t err = vnpu_memcpy(dest, src, count, VNPU_MEMCPY_D2D);
		TORCH_CHECK(err == VNPU_SUCCESS, "torch_vnpu: storage copy: ",
			    vnpu_error_string(err));
	}
};

NpuAllocator the_allocator;

} // namespace

c10::Allocator *npu_allocator()
{
	return &the_allocator;
}

struct vnpu_at_storage *storage_of_data_ptr(const c10::DataPtr &p)
{
	if (p.get_deleter() != &release_storage)
		return nullptr;
	return static_cast<struct vnpu_at_storage *>(p.get_context());
}

struct vnpu_at_storage *storage_of(const c10::Storage &s)
{
	return storage_of_data_ptr(s.data_ptr());
}

struct vnpu_at_storage *acquire_storage(const c10::Storage &s)
{
	struct vnpu_at_storage *own = storage_of(s);

	if (own)
		return vnpu_at_storage_retain(own);
	TORCH_CHECK(s.device().type() == kNpu, "torch_vnpu: a ", s.device(),
		    " storage where an npu one was expected");
	struct vnpu_at_storage *b = vnpu_at_npu_storage_borrow(
		s.mutable_data(), s.nbytes(), s.device().index());
	if (!b)
		throw_dispatch_error("torch_vnpu");
	return b;
}

c10::Storage wrap_storage(struct vnpu_at_storage *s)
{
	vnpu_at_storage_retain(s);
	c10::DataPtr p(s->data, s, &release_storage,
		       c10::Device(kNpu, (c10::DeviceIndex)s->device.index));
	return c10::Storage(c10::Storage::use_byte_size_t(), s->nbytes,
			    std::move(p), &the_allocator, /*resizable=*/true);
}

void resize_storage_bytes(const c10::Storage &storage, size_t newsize)
{
	struct vnpu_at_storage *old = storage_of(storage);

	TORCH_CHECK(old, "resize_: not an npu storage of torch_vnpu");
	TORCH_CHECK(old->npu.npu_format == VNPU_FORMAT_ND,
		    "resize_: an npu storage in an internal format (",
		    old->npu.npu_format, ") cannot be resized; cast it to ND first");
	TORCH_CHECK(storage.resizable(), "resize_: the storage is not resizable");
	c10::DataPtr fresh = the_allocator.allocate(newsize);
	size_t keep = std::min(newsize, old->nbytes);

	if (keep)
		the_allocator.copy_data(fresh.get(), old->data, keep);
	c10::StorageImpl *impl = storage.unsafeGetStorageImpl();
	impl->set_data_ptr_noswap(std::move(fresh));
	impl->set_nbytes(newsize);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &the_allocator);

} // namespace torch_vnpu
