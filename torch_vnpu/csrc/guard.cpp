// SPDX-License-Identifier: MIT
// c10's device guard for PrivateUse1: device index and stream of the
// calling thread are the dispatcher's (vnpu_at_npu_set_device/_stream);
// a stream id is the libvnpurt stream handle (0: the default stream);
// events are libvnpurt events.
#include "backend.h"

#include <atomic>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "vnpu_runtime.h"

namespace torch_vnpu {

static std::atomic<bool> started;

bool runtime_started()
{
	return started.load();
}

int device_count()
{
	int n = 0;

	if (vnpu_init() != VNPU_SUCCESS || vnpu_device_count(&n) != VNPU_SUCCESS)
		return 0;
	started.store(true);
	return n;
}

int current_device()
{
	int d = 0;

	if (vnpu_init() != VNPU_SUCCESS)
		TORCH_CHECK(false, "torch_vnpu: the npu runtime failed to start: ",
			    vnpu_last_error_detail());
	started.store(true);
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

namespace {

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
	void record(void **event, const c10::Stream &stream,
		    const c10::DeviceIndex, const c10::EventFlag) const override
	{
		if (!*event) {
			vnpu_event_t e;
			vnpu_error_t r = vnpu_event_create(&e, VNPU_EVENT_DISABLE_TIMING);

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
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NpuGuardImpl);

} // namespace torch_vnpu
