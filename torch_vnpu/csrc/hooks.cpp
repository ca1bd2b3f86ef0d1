// SPDX-License-Identifier: MIT
// What PyTorch 2 asks of a PrivateUse1 backend beyond kernels and the
// device guard: its hooks (availability, generators, pinned host memory,
// storage resize), record_stream, and what makes CPU and npu tensors
// exchange storages as CPU and CUDA ones do.
#include "backend.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/library.h>

#include <map>
#include <mutex>

#include "vnpu_runtime.h"

namespace torch_vnpu {

namespace {

// Pinned host memory is libvnpurt's (vnpu_host_malloc: the device DMAs it
// without staging). The blocks it gave out are remembered so that
// is_pinned answers for any pointer into one.
struct PinnedAllocator final : c10::Allocator {
	std::mutex lock;
	std::map<uintptr_t, size_t> blocks;	// start -> size

	static void release(void *p);

	c10::DataPtr allocate(size_t nbytes) override
	{
		void *p = nullptr;
		vnpu_error_t e;

		// pinning may be the process's first npu call (as CUDA's
		// pinned allocator, it starts the runtime; throws if it fails)
		current_device();
		e = vnpu_host_malloc(&p, nbytes ? nbytes : 1);
		if (e == VNPU_ERROR_OUT_OF_MEMORY)
			throw c10::OutOfMemoryError(
				{ __func__, __FILE__, __LINE__ },
				std::string("npu pinned memory: ") +
					vnpu_error_string(e) + " (" +
					vnpu_last_error_detail() + ")");
		TORCH_CHECK(e == VNPU_SUCCESS, "npu pinned memory: ",
			    vnpu_error_string(e), " (", vnpu_last_error_detail(), ")");
		{
			std::lock_guard<std::mutex> g(lock);
			blocks[(uintptr_t)p] = nbytes ? nbytes : 1;
		}
		return { p, p, &release, c10::Device(c10::DeviceType::CPU) };
	}
	c10::DeleterFnPtr raw_deleter() const override
	{
		return &release;
	}
	void copy_data(void *dest, const void *src, size_t count) const override
	{
		default_copy_data(dest, src, count);
	}
	bool contains(const void *ptr)
	{
		std::lock_guard<std::mutex> g(lock);
		auto it = blocks.upper_bound((uintptr_t)ptr);

		if (it == blocks.begin())
			return false;
		--it;
		return (uintptr_t)ptr - it->first < it->second;
	}
};

PinnedAllocator pinned;

void PinnedAllocator::release(void *p)
{
	{
		std::lock_guard<std::mutex> g(pinned.lock);
		pinned.blocks.erase((uintptr_t)p);
	}
	vnpu_host_free(p);
}

struct NpuHooks final : at::PrivateUse1HooksInterface {
	// Virtual in PyTorch 2.7 and later, where they throw unless a backend
	// defines them; not in 2.6 (so no `override`: one source for both).
	bool isBuilt() const
	{
		return true;
	}
	bool isAvailable() const
	{
		return device_count() > 0;
	}
	// Random numbers are drawn on the host with PyTorch's CPU generator
	// (random.cpp), so npu draws equal the CPU's for one seed.
	const at::Generator &
	getDefaultGenerator(c10::DeviceIndex device_index) const override
	{
		return at::detail::getDefaultCPUGenerator();
	}
	at::Generator getNewGenerator(c10::DeviceIndex device_index) const override
	{
		return at::detail::createCPUGenerator();
	}
	at::Device getDeviceFromPtr(void *data) const override
	{
		return c10::Device(kNpu, (c10::DeviceIndex)current_device());
	}
	bool isPinnedPtr(const void *data) const override
	{
		return pinned.contains(data);
	}
	c10::Allocator *getPinnedMemoryAllocator() const override
	{
		return &pinned;
	}
	bool hasPrimaryContext(c10::DeviceIndex device_index) const override
	{
		return runtime_started();
	}
	c10::DeviceIndex deviceCount() const override
	{
		return (c10::DeviceIndex)device_count();
	}
	void setCurrentDevice(c10::DeviceIndex device) const override
	{
		set_device(device);
	}
	c10::DeviceIndex getCurrentDevice() const override
	{
		return (c10::DeviceIndex)current_device();
	}
	c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override
	{
		c10::DeviceIndex old = getCurrentDevice();

		if (device != old)
			set_device(device);
		return old;
	}
	c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override
	{
		return exchangeDevice(device);
	}
	// storage.resize_(n): a new block, the old bytes that fit copied over.
	void resizePrivateUse1Bytes(const c10::Storage &storage,
				    size_t newsize) const override
	{
		resize_storage_bytes(storage, newsize);
	}
};

NpuHooks hooks;

void record_stream(at::Tensor &self, c10::Stream s)
{
	TORCH_CHECK(s.device_type() == kNpu, "record_stream: expected an npu stream, got a ",
		    s.device_type(), " one");
	TORCH_CHECK(storage_of(self.storage()),
		    "record_stream: the tensor's memory was not allocated by torch_vnpu");
	c10::impl::VirtualGuardImpl(kNpu).recordDataPtrOnStream(
		self.storage().data_ptr(), s);
}

// Whether `self` may take `from`'s storage in place (set_data, and
// Module._apply's choice between changing a Parameter in place and making
// a new one): PyTorch counts only its own dense backends, so without this
// `.to('npu')` would untie tied weights and `p.data = npu_tensor` would
// fail. Dense strided CPU and npu tensors are as compatible as CPU and
// CUDA ones.
bool has_compatible_shallow_copy_type(const at::Tensor &self,
				      const at::Tensor &from)
{
	auto dense = [](const at::Tensor &t) {
		return t.layout() == at::kStrided &&
		       (t.device().is_cpu() || t.device().type() == kNpu);
	};
	if (dense(self) && dense(from))
		return true;
	return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(
		from.key_set());
}

struct RegisterHooks {
	RegisterHooks()
	{
		at::RegisterPrivateUse1HooksInterface(&hooks);
	}
} register_hooks;

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("record_stream", TORCH_FN(record_stream));
	m.impl("_has_compatible_shallow_copy_type",
	       TORCH_FN(has_compatible_shallow_copy_type));
}

} // namespace torch_vnpu
