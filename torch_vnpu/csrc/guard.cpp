// SPDX-License-Identifier: MIT
// c10's device guard for PrivateUse1: device index and stream of the
// calling thread are the dispatcher's (vnpu_at_npu_set_device/_stream);
// a stream id is the libvnpurt stream handle (0: the default stream);
// events are libvnpurt events.
#include "backend.h"

#include <map>
#include <mutex>
#include <vector>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "vnpu_runtime.h"

namespace torch_vnpu {

bool runtime_started()
{
	return vnpu_is_initialized();
}

// Counted without starting the runtime until something else starts it:
// torch.npu.is_available() and device_count() leave the process free to
// fork and use the device in the child, as torch.cuda's do.
int device_count()
{
	int n = 0;

	if (vnpu_is_initialized())
		return vnpu_device_count(&n) == VNPU_SUCCESS ? n : 0;
	return vnpu_device_count_probe(&n) == VNPU_SUCCESS ? n : 0;
}

int current_device()
{
	int d = 0;

	// Once per process: guards, allocations and factories all ask.
	if (!vnpu_at_npu_start())
		throw_dispatch_error("torch_vnpu");
	vnpu_get_device(&d);
	return d;
}

void set_device(int index)
{
	int n = device_count();

	TORCH_CHECK_INDEX(index >= 0 && index < n, "npu device index ", index,
			  " is out of range: this machine has ", n,
			  " npu device", n == 1 ? "" : "s");
	if (!vnpu_at_npu_set_device(index))
		throw_dispatch_error("torch_vnpu: set_device");
}

void synchronize_device(int index)
{
	int prev = current_device();
	vnpu_error_t r;

	if (index < 0 || index == prev) {
		r = vnpu_device_synchronize();
	} else {
		set_device(index);
		r = vnpu_device_synchronize();
		set_device(prev);
	}
	TORCH_CHECK(r == VNPU_SUCCESS, "npu synchronize: ", vnpu_error_string(r),
		    " (", vnpu_last_error_detail(), ")");
}

namespace {

constexpr int kPoolStreams = 16;

void *pooled_stream(c10::DeviceIndex dev, int priority)
{
	static std::mutex lock;
	static std::map<std::pair<int, int>, std::vector<vnpu_stream_t>> pools;
	static std::map<std::pair<int, int>, unsigned> next;

	TORCH_CHECK(priority == 0 || priority == 1 || priority == -1,
		    "npu stream priority must be 0 (low) or 1 or -1 (high), not ",
		    priority);
	int prio = priority ? VNPU_STREAM_PRIORITY_HIGH : VNPU_STREAM_PRIORITY_LOW;
	c10::DeviceIndex idx = dev < 0 ? (c10::DeviceIndex)current_device() : dev;
	std::lock_guard<std::mutex> g(lock);
	auto key = std::make_pair((int)idx, prio);
	std::vector<vnpu_stream_t> &pool = pools[key];
	unsigned i = next[key]++ % kPoolStreams;

	if (i >= pool.size()) {
		int prev = current_device();
		vnpu_stream_t s;

		set_device(idx);
		vnpu_error_t r = vnpu_stream_create(&s, prio);
		set_device(prev);
		TORCH_CHECK(r == VNPU_SUCCESS, "npu stream create: ",
			    vnpu_error_string(r));
		pool.push_back(s);
		i = pool.size() - 1;
	}
	return pool[i];
}

c10::Stream stream_of(c10::DeviceIndex dev, void *s)
{
	return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, dev),
			   (c10::StreamId)(intptr_t)s);
}

struct NpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
	c10::DeviceType type() const override
	{
		return kNpu;
	}
	c10::Device exchangeDevice(c10::Device d) const override
	{
		c10::Device old = getDevice();
		if (d.index() != old.index())
			set_device(d.index());
		return old;
	}
	c10::Device getDevice() const override
	{
		return c10::Device(kNpu, (c10::DeviceIndex)current_device());
	}
	void setDevice(c10::Device d) const override
	{
		set_device(d.index());
	}
	void uncheckedSetDevice(c10::Device d) const noexcept override
	{
		vnpu_at_npu_set_device(d.index());
		vnpu_at_error_clear();
	}
	c10::Stream getStream(c10::Device d) const noexcept override
	{
		return stream_of(d.index(), vnpu_at_npu_stream());
	}
	c10::Stream getDefaultStream(c10::Device d) const override
	{
		return stream_of(d.index(), nullptr);
	}
	c10::Stream exchangeStream(c10::Stream s) const noexcept override
	{
		void *old = vnpu_at_npu_stream();

		vnpu_at_npu_set_stream((void *)(intptr_t)s.id());
		return stream_of(s.device_index(), old);
	}
	c10::DeviceIndex deviceCount() const noexcept override
	{
		return (c10::DeviceIndex)device_count();
	}
	// torch.Stream(device='npu'): streams come from a pool per device and
	// priority, as CUDA's do, since PyTorch copies a Stream around freely
	// and never says when the last copy is gone.
	c10::Stream getNewStream(c10::Device d, int priority) const override
	{
		return stream_of(d.index(), pooled_stream(d.index(), priority));
	}
	c10::Stream getStreamFromGlobalPool(c10::Device d,
					    bool high_priority) const override
	{
		return getNewStream(d, high_priority ? 1 : 0);
	}
	void record(void **event, const c10::Stream &stream,
		    const c10::DeviceIndex, const c10::EventFlag flag) const override
	{
		if (!*event) {
			vnpu_event_t e;
			vnpu_error_t r = vnpu_event_create(
				&e, flag == c10::EventFlag::BACKEND_DEFAULT ?
					    VNPU_EVENT_DEFAULT :
					    VNPU_EVENT_DISABLE_TIMING);

			TORCH_CHECK(r == VNPU_SUCCESS, "npu event: ",
				    vnpu_error_string(r));
			*event = e;
		}
		vnpu_error_t r = vnpu_event_record(
			static_cast<vnpu_event_t>(*event),
			(vnpu_stream_t)(intptr_t)stream.id());
		TORCH_CHECK(r == VNPU_SUCCESS, "npu event record: ",
			    vnpu_error_string(r));
	}
	void block(void *event, const c10::Stream &stream) const override
	{
		if (!event)
			return;
		vnpu_error_t r = vnpu_stream_wait_event(
			(vnpu_stream_t)(intptr_t)stream.id(),
			static_cast<vnpu_event_t>(event));
		TORCH_CHECK(r == VNPU_SUCCESS, "npu stream wait: ",
			    vnpu_error_string(r));
	}
	bool queryEvent(void *event) const override
	{
		return !event ||
		       vnpu_event_query(static_cast<vnpu_event_t>(event)) ==
			       VNPU_SUCCESS;
	}
	void destroyEvent(void *event, const c10::DeviceIndex) const
		noexcept override
	{
		if (event)
			vnpu_event_destroy(static_cast<vnpu_event_t>(event));
	}
	bool queryStream(const c10::Stream &s) const override
	{
		return vnpu_stream_query((vnpu_stream_t)(intptr_t)s.id()) ==
		       VNPU_SUCCESS;
	}
	void synchronizeStream(const c10::Stream &s) const override
	{
		vnpu_error_t r =
			vnpu_stream_synchronize((vnpu_stream_t)(intptr_t)s.id());
		TORCH_CHECK(r == VNPU_SUCCESS, "npu stream synchronize: ",
			    vnpu_error_string(r), " (", vnpu_last_error_detail(),
			    ")");
	}
	void synchronizeEvent(void *event) const override
	{
		if (!event)
			return;
		vnpu_error_t r = vnpu_event_synchronize(static_cast<vnpu_event_t>(event));
		TORCH_CHECK(r == VNPU_SUCCESS, "npu event synchronize: ",
			    vnpu_error_string(r), " (", vnpu_last_error_detail(),
			    ")");
	}
	void synchronizeDevice(const c10::DeviceIndex index) const override
	{
		synchronize_device(index);
	}
	double elapsedTime(void *start, void *end,
			   const c10::DeviceIndex) const override
	{
		TORCH_CHECK(start && end, "npu elapsed_time: both events must be "
			    "recorded first");
		float ms = 0;
		vnpu_error_t r = vnpu_event_elapsed_time(
			&ms, static_cast<vnpu_event_t>(start),
			static_cast<vnpu_event_t>(end));
		TORCH_CHECK(r == VNPU_SUCCESS, "npu elapsed_time: ",
			    vnpu_error_string(r), " (", vnpu_last_error_detail(),
			    ")");
		return ms;
	}
	void recordDataPtrOnStream(const c10::DataPtr &p,
				   const c10::Stream &stream) const override
	{
		struct vnpu_at_storage *st = storage_of_data_ptr(p);

		if (st && !vnpu_at_storage_record_stream(
				  st, (void *)(intptr_t)stream.id()))
			throw_dispatch_error("record_stream");
	}
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NpuGuardImpl);

} // namespace torch_vnpu
