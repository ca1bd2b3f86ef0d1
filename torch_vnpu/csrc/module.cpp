// SPDX-License-Identifier: MIT
// torch_vnpu._C: what the Python package calls (torch_vnpu/npu.py wraps
// it in torch.cuda's shape). Streams and events are libvnpurt handles
// (generation-checked there, so a stale or made-up id is an error, not a
// dereference).
#include "backend.h"

#include <torch/extension.h>

#include "vnpu_runtime.h"

namespace torch_vnpu {

static void check(vnpu_error_t e, const char *what)
{
	if (e != VNPU_SUCCESS) {
		std::string d = vnpu_last_error_detail();

		TORCH_CHECK(false, "npu ", what, ": ", vnpu_error_string(e),
			    d.empty() ? "" : " (", d, d.empty() ? "" : ")");
	}
}

static void check_device(int64_t device)
{
	int n = device_count();

	TORCH_CHECK_INDEX(device >= 0 && device < n, "npu device index ", device,
			  " is out of range: this machine has ", n,
			  " npu device", n == 1 ? "" : "s");
}

static vnpu_stream_t stream_handle(int64_t id)
{
	return (vnpu_stream_t)(intptr_t)id;
}

static vnpu_event_t event_handle(int64_t id)
{
	TORCH_CHECK(id != 0, "npu event: not created");
	return (vnpu_event_t)(intptr_t)id;
}

static py::dict memory_stats(int64_t device)
{
	struct vnpu_at_npu_memory_stats s;

	check_device(device);
	if (!vnpu_at_npu_memory_stats((int)device, &s))
		throw_dispatch_error("memory_stats");
	py::dict d;
	d["allocated_bytes.all.current"] = s.allocated;
	d["allocated_bytes.all.peak"] = s.peak;
	d["reserved_bytes.all.current"] = s.reserved;
	return d;
}

static std::vector<std::pair<std::string, uint64_t>>
report(size_t (*get)(struct vnpu_fallback_entry *, size_t))
{
	std::vector<struct vnpu_fallback_entry> e(1024);
	size_t n = get(e.data(), e.size());
	std::vector<std::pair<std::string, uint64_t>> out;

	for (size_t i = 0; i < n && i < e.size(); i++)
		out.emplace_back(e[i].op, e[i].count);
	return out;
}

static void set_fallback_policy(const std::string &p)
{
	if (p == "allow")
		vnpu_fallback_set_policy(VNPU_FALLBACK_ALLOW);
	else if (p == "warn")
		vnpu_fallback_set_policy(VNPU_FALLBACK_WARN);
	else if (p == "error")
		vnpu_fallback_set_policy(VNPU_FALLBACK_ERROR);
	else
		throw py::value_error("fallback policy must be 'allow', 'warn' or 'error', not '" + p + "'");
}

static std::string fallback_policy()
{
	switch (vnpu_fallback_policy()) {
	case VNPU_FALLBACK_WARN: return "warn";
	case VNPU_FALLBACK_ERROR: return "error";
	default: return "allow";
	}
}

static std::string backend_name()
{
	struct vnpu_device_props p;

	check(vnpu_device_properties(current_device(), &p), "device properties");
	return p.name;
}

} // namespace torch_vnpu

PYBIND11_MODULE(_C, m)
{
	using namespace torch_vnpu;
	m.doc() = "torch_vnpu native module (see torch_vnpu.npu)";
	register_direct_fallbacks();

	m.def("device_count", &device_count);
	m.def("runtime_started", &runtime_started);
	m.def("current_device", &current_device);
	m.def("set_device", [](int64_t d) { check_device(d); set_device((int)d); });
	m.def("device_name", &backend_name);
	m.def("synchronize", [](int64_t d) {
		check_device(d);
		synchronize_device((int)d);
	});

	// c10's number of the PrivateUse1 device type (torch.Stream's
	// device_type argument)
	m.attr("DEVICE_TYPE_ID") = (int)c10::DeviceType::PrivateUse1;
	m.def("stream_create", [](int priority) {
		vnpu_stream_t s;
		check(vnpu_stream_create(&s, priority), "stream create");
		return (int64_t)(intptr_t)s;
	});
	m.def("stream_destroy", [](int64_t id) {
		if (id)
			check(vnpu_stream_destroy(stream_handle(id)), "stream destroy");
	});
	m.def("stream_synchronize", [](int64_t id) {
		py::gil_scoped_release nogil;
		check(vnpu_stream_synchronize(stream_handle(id)), "stream synchronize");
	});
	m.def("stream_query", [](int64_t id) {
		vnpu_error_t e = vnpu_stream_query(stream_handle(id));
		if (e == VNPU_ERROR_NOT_READY)
			return false;
		check(e, "stream query");
		return true;
	});
	m.def("current_stream", []() { return (int64_t)(intptr_t)vnpu_at_npu_stream(); });
	m.def("set_stream", [](int64_t id) {
		vnpu_error_t e = id ? vnpu_stream_query(stream_handle(id)) :
				      VNPU_SUCCESS;
		check(e == VNPU_ERROR_NOT_READY ? VNPU_SUCCESS : e, "set stream");
		vnpu_at_npu_set_stream((void *)(intptr_t)id);
	});

	m.def("event_create", [](bool timing) {
		vnpu_event_t e;
		check(vnpu_event_create(&e, timing ? VNPU_EVENT_DEFAULT :
					 VNPU_EVENT_DISABLE_TIMING), "event create");
		return (int64_t)(intptr_t)e;
	});
	m.def("event_destroy", [](int64_t id) {
		if (id)
			check(vnpu_event_destroy(event_handle(id)), "event destroy");
	});
	m.def("event_record", [](int64_t ev, int64_t stream) {
		check(vnpu_event_record(event_handle(ev), stream_handle(stream)),
		      "event record");
	});
	m.def("event_synchronize", [](int64_t ev) {
		py::gil_scoped_release nogil;
		check(vnpu_event_synchronize(event_handle(ev)), "event synchronize");
	});
	m.def("event_query", [](int64_t ev) {
		vnpu_error_t e = vnpu_event_query(event_handle(ev));
		if (e == VNPU_ERROR_NOT_READY)
			return false;
		check(e, "event query");
		return true;
	});
	m.def("event_elapsed_time", [](int64_t start, int64_t end) {
		float ms = 0;
		check(vnpu_event_elapsed_time(&ms, event_handle(start), event_handle(end)),
		      "event elapsed time");
		return ms;
	});
	m.def("stream_wait_event", [](int64_t stream, int64_t ev) {
		check(vnpu_stream_wait_event(stream_handle(stream), event_handle(ev)),
		      "stream wait event");
	});

	m.def("memory_stats", &memory_stats);
	m.def("reset_peak_memory_stats", [](int64_t d) {
		check_device(d);
		if (!vnpu_at_npu_reset_peak((int)d))
			throw_dispatch_error("reset_peak_memory_stats");
	});
	m.def("empty_cache", []() { vnpu_at_npu_empty_cache(); });

	m.def("fallback_report", []() { return report(vnpu_fallback_report); });
	m.def("fallback_rejections", []() { return report(vnpu_fallback_rejections); });
	m.def("fallback_reset", []() { vnpu_fallback_reset(); });
	m.def("fallback_policy", &fallback_policy);
	m.def("set_fallback_policy", &set_fallback_policy);
}
