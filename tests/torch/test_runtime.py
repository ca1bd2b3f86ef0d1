# SPDX-License-Identifier: MIT
"""torch_vnpu.npu against torch.cuda's contract (CUDA's stream and event
rules): devices, streams, events with timing, memory statistics."""
import gc
import subprocess
import sys

import pytest
import torch

import torch_vnpu
from torch_vnpu import npu
from conftest import NPU


def test_devices():
    assert npu.is_available()
    assert npu.device_count() >= 1
    assert npu.current_device() == 0
    assert torch_vnpu.device() == torch.device('npu', 0)
    assert torch_vnpu.device(0) == NPU
    assert 'vnpu' in npu.get_device_name()
    npu.set_device(0)
    with npu.device(0):
        assert npu.current_device() == 0
    n = npu.device_count()
    with pytest.raises(IndexError, match='out of range'):
        npu.set_device(n)
    with pytest.raises(IndexError, match='out of range'):
        npu.set_device(-1)
    with pytest.raises(ValueError, match='expected an npu device'):
        npu.set_device('cpu')
    with pytest.raises(RuntimeError, match='does not exist'):
        torch.ones(3, device=torch.device('npu', n))


def big_work(x, reps=8):
    for _ in range(reps):
        x = x @ x
        x = x / x.abs().amax()
    return x


def test_stream_orders_its_work_and_events_order_streams():
    s1, s2 = npu.Stream(), npu.Stream()
    a = torch.randn(256, 256).to(NPU)
    npu.synchronize()
    with npu.stream(s1):
        assert npu.current_stream() == s1
        b = big_work(a)
        done = s1.record_event()
    assert npu.current_stream() == npu.default_stream()
    with npu.stream(s2):
        s2.wait_event(done)
        c = b + 1
    s2.synchronize()
    assert s1.query() and s2.query() and done.query()
    ref = big_work(a.cpu())
    torch.testing.assert_close(c.cpu(), ref + 1, rtol=1e-4, atol=1e-4)


def test_event_timing():
    x = torch.randn(512, 512).to(NPU)
    start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
    start.record()
    big_work(x, 4)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert ms > 0
    with pytest.raises(RuntimeError):
        npu.Event().elapsed_time(npu.Event())   # never recorded, no timing


def test_synchronize_waits_for_queued_work():
    s = npu.Stream()
    x = torch.randn(512, 512).to(NPU)
    npu.synchronize()
    with npu.stream(s):
        big_work(x, 6)
    npu.synchronize()       # every stream of the device, not only the current
    assert s.query() and npu.current_stream().query()


def test_memory_statistics():
    npu.empty_cache()
    base = npu.memory_allocated()
    npu.reset_peak_memory_stats()
    assert npu.max_memory_allocated() == base
    x = torch.empty(1 << 20, device=NPU)            # 4 MiB
    assert npu.memory_allocated() == base + (4 << 20)
    assert npu.max_memory_allocated() == npu.memory_allocated()
    assert npu.memory_reserved() >= npu.memory_allocated()
    del x
    assert npu.memory_allocated() == base
    assert npu.max_memory_allocated() == base + (4 << 20)
    held = npu.memory_reserved()
    assert held >= base + (4 << 20)                 # cached
    npu.empty_cache()
    assert npu.memory_reserved() <= held - (4 << 20)
    assert npu.memory_reserved() >= npu.memory_allocated()
    npu.reset_peak_memory_stats()
    assert npu.max_memory_allocated() == base
    with pytest.raises(IndexError):
        npu.memory_allocated(99)


def test_memory_statistics_do_not_start_the_device():
    # As torch.cuda's: a process that only asked may still fork, and the
    # child use the device.
    code = ("import os, torch, torch_vnpu\n"
            "assert torch.npu.memory_allocated() == 0\n"
            "assert torch.npu.memory_reserved() == 0\n"
            "torch.npu.reset_peak_memory_stats()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    ok = torch.ones(2, device='npu').sum().item() == 2\n"
            "    os._exit(0 if ok else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "assert os.WEXITSTATUS(status) == 0, status\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_caching_allocator_reuses_blocks_in_stream_order():
    npu.empty_cache()
    x = torch.empty(1000, device=NPU)
    p = x.data_ptr()
    del x
    assert torch.empty(1000, device=NPU).data_ptr() == p   # same stream
    s = npu.Stream()
    with npu.stream(s):
        y = torch.empty(1000, device=NPU).fill_(2)
        q = y.data_ptr()
        y = None                    # freed on s, after the fill
        z = torch.empty(1000, device=NPU).fill_(3)
        assert z.data_ptr() == q    # s's own block, at once
    s.synchronize()
    assert z.cpu().eq(3).all()


def test_memory_of_a_destroyed_stream_is_given_back():
    npu.empty_cache()
    base = npu.memory_allocated()
    s = npu.Stream()
    with npu.stream(s):
        x = torch.ones(1 << 20, device=NPU)
    assert npu.memory_allocated() == base + (4 << 20)
    del s                   # its runtime stream is destroyed; x lives on
    gc.collect()
    assert x.sum().item() == 1 << 20
    del x                   # its stream is gone: freed after a device wait
    assert npu.memory_allocated() == base


def test_bad_handles_are_errors_not_crashes():
    with pytest.raises(RuntimeError):
        torch_vnpu._C.stream_synchronize(0x1234)
    with pytest.raises(RuntimeError):
        torch_vnpu._C.event_synchronize(0x5678)
    with pytest.raises(RuntimeError):
        torch_vnpu._C.set_stream(0x4242)
    s = npu.Stream()
    sid = s.id
    del s
    with pytest.raises(RuntimeError):
        torch_vnpu._C.stream_query(sid)       # destroyed


def test_pinned_memory():
    c = torch.arange(1000.)
    p = c.pin_memory(device=NPU)
    assert p.is_pinned(device=NPU) and not c.is_pinned(device=NPU)
    assert torch.equal(p, c)
    n = p.to(NPU, non_blocking=True)
    h = torch.empty(1000).pin_memory(device=NPU)
    h.copy_(n, non_blocking=True)
    npu.synchronize()
    assert torch.equal(h, c)
