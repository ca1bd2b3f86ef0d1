// SPDX-License-Identifier: MIT
// npu memory for PyTorch: each storage is a dispatcher storage (the
// caching device allocator over libvnpurt, storage.c). The DataPtr's
// pointer is a device VA, never dereferenced on the host; its context is
// the dispatcher storage, which carries the NPU format descriptor.
#include "backend.h"

namespace torch_vnpu {

static void release_storage(void *ctx)
{
	vnpu_at_storage_release(static_cast<struct vnpu_at_storage *>(ctx));
}

namespace {

struct NpuAllocator final : c10::Allocator {
	c10::DataPtr allocate(size_t nbytes) const override
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
};

NpuAllocator the_allocator;

} // namespace

c10::Allocator *npu_allocator()
{
	return &the_allocator;
}

struct vnpu_at_storage *storage_of(const c10::Storage &s)
{
	const c10::DataPtr &p = s.data_ptr();

	if (p.get_deleter() != &release_storage)
		return nullptr;
	return static_cast<struct vnpu_at_storage *>(p.get_context());
}

c10::Storage wrap_storage(struct vnpu_at_storage *s)
{
	vnpu_at_storage_retain(s);
	c10::DataPtr p(s->data, s, &release_storage,
		       c10::Device(kNpu, (c10::DeviceIndex)s->device.index));
	return c10::Storage(c10::Storage::use_byte_size_t(), s->nbytes,
			    std::move(p), &the_allocator, /*resizable=*/true);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &the_allocator);

} // namespace torch_vnpu
