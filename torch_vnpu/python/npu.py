# SPDX-License-Identifier: MIT
"""torch.cuda's API for the npu: devices, streams, events, memory.

Streams and events are libvnpurt's, with CUDA's rules (docs/runtime-api.md):
work on one stream runs in order; an event recorded on a stream completes
when the work queued before it has; stream.wait_event orders across
streams. Tensors allocated while a stream is current return their memory
to the cache for reuse on that stream only; a tensor used on another
stream needs an event before it is freed (as PyTorch's record_stream).
"""
import contextlib
import os

import torch

from . import _C

_TYPE = 'npu'


def _index(device):
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != _TYPE:
        raise ValueError('expected an npu device (%r), got %r' % (_TYPE, str(d)))
    return _C.current_device() if d.index is None else d.index


def is_available():
    return _C.device_count() > 0


def device_count():
    return _C.device_count()


def current_device():
    return _C.current_device()


def set_device(device):
    _C.set_device(_index(device))


def get_device_name(device=None):
    idx = _index(device)
    prev = _C.current_device()
    _C.set_device(idx)
    try:
        return _C.device_name()
    finally:
        _C.set_device(prev)


def synchronize(device=None):
    """Waits for all work on every stream of the device."""
    _C.synchronize(_index(device))


class device(object):
    """Context manager: the current npu device inside the block."""

    def __init__(self, dev):
        self.idx = _index(dev)
        self.prev = None

    def __enter__(self):
        self.prev = _C.current_device()
        _C.set_device(self.idx)

    def __exit__(self, *exc):
        _C.set_device(self.prev)
        return False


_device_ctx = device


class Stream(torch.Stream):
    """An npu stream (priority 0 low, 1 high), a torch.Stream: it can be
    passed wherever PyTorch takes one (tensor.record_stream,
    torch.Stream methods). Stream(_id=0) wraps the default stream. A
    Stream made here owns its runtime stream until it is garbage."""

    def __new__(cls, device=None, priority=0, _id=None):
        idx = _index(device)
        with _device_ctx(idx):
            sid = _C.stream_create(priority) if _id is None else _id
        self = super().__new__(cls, stream_id=sid, device_index=idx,
                               device_type=_C.DEVICE_TYPE_ID)
        self._owned = _id is None
        return self

    def __init__(self, device=None, priority=0, _id=None):
        pass

    @property
    def id(self):
        return self.stream_id

    @property
    def device(self):
        return torch.device(_TYPE, self.device_index)

    def synchronize(self):
        _C.stream_synchronize(self.id)

    def query(self):
        return _C.stream_query(self.id)

    def wait_event(self, event):
        _C.stream_wait_event(self.id, event._id())

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, torch.Stream) and \
            self.stream_id == other.stream_id and \
            self.device_index == other.device_index and \
            self.device_type == other.device_type

    def __hash__(self):
        return hash((self.stream_id, self.device_index))

    def __repr__(self):
        return '<torch.npu.Stream device=%s id=%#x>' % (self.device, self.id)

    def __del__(self):
        if getattr(self, '_owned', False) and self.id:
            try:
                _C.stream_destroy(self.id)
            except Exception:
                pass


def current_stream(device=None):
    return Stream(device, _id=_C.current_stream())


def default_stream(device=None):
    return Stream(device, _id=0)


@contextlib.contextmanager
def stream(s):
    """Makes s the current stream inside the block (None: no change)."""
    if s is None:
        yield
        return
    prev = _C.current_stream()
    _C.set_stream(s.id)
    try:
        yield
    finally:
        _C.set_stream(prev)


class Event(object):
    """An npu event; enable_timing=True allows elapsed_time."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError('npu events are not shared between processes')
        self.enable_timing = enable_timing
        self.id = 0

    def _id(self):
        if not self.id:
            self.id = _C.event_create(self.enable_timing)
        return self.id

    def record(self, stream=None):
        s = stream if stream is not None else current_stream()
        _C.event_record(self._id(), s.id)

    def wait(self, stream=None):
        s = stream if stream is not None else current_stream()
        s.wait_event(self)

    def query(self):
        return True if not self.id else _C.event_query(self.id)

    def synchronize(self):
        if self.id:
            _C.event_synchronize(self.id)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and end_event (both recorded
        and complete, both with enable_timing)."""
        return _C.event_elapsed_time(self._id(), end_event._id())

    def __del__(self):
        if getattr(self, 'id', 0):
            try:
                _C.event_destroy(self.id)
            except Exception:
                pass


def memory_stats(device=None):
    """The device's memory counts, as torch.cuda.memory_stats: empty before
    the device started (asking does not start it, so a process that only
    asked may still fork and use the device in the child)."""
    if not _C.runtime_started():
        return {}
    return _C.memory_stats(_index(device))


def memory_allocated(device=None):
    """Bytes of the process's live allocations on the device, as asked."""
    return memory_stats(device).get('allocated_bytes.all.current', 0)


def max_memory_allocated(device=None):
    return memory_stats(device).get('allocated_bytes.all.peak', 0)


def memory_reserved(device=None):
    """Device bytes held: the allocations' and the cache's."""
    return memory_stats(device).get('reserved_bytes.all.current', 0)


def reset_peak_memory_stats(device=None):
    if _C.runtime_started():
        _C.reset_peak_memory_stats(_index(device))


def empty_cache():
    """Returns cached blocks to the device."""
    _C.empty_cache()


def get_amp_supported_dtype():
    """The dtypes torch.autocast('npu', dtype=...) takes: the device's
    matrix and vector units compute float16 and bfloat16."""
    return [torch.float16, torch.bfloat16]


# ---- fork and random numbers -------------------------------------------------

_in_bad_fork = False
_started_at_fork = False


def _before_fork():
    global _started_at_fork
    _started_at_fork = _C.runtime_started()


def _mark_bad_fork():
    global _in_bad_fork
    if _started_at_fork:
        _in_bad_fork = True


os.register_at_fork(before=_before_fork, after_in_child=_mark_bad_fork)


def _is_in_bad_fork():
    """Whether this process was forked from one that had started the npu
    runtime (libvnpurt then refuses every call in it, CUDA's rule)."""
    return _in_bad_fork


# npu random numbers are drawn on the host from PyTorch's CPU generator
# (docs/torch.md), so the npu's generator state is that generator's.
def manual_seed(seed):
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed):
    manual_seed(seed)


def seed():
    torch.default_generator.seed()


def seed_all():
    seed()


def initial_seed():
    return torch.default_generator.initial_seed()


def _checked_index(device):
    idx = _index(device)
    n = device_count()
    if not 0 <= idx < n:
        raise IndexError('npu device index %d is out of range: this machine '
                         'has %d npu device%s' % (idx, n, '' if n == 1 else 's'))
    return idx


def get_rng_state(device='npu'):
    _checked_index(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state, device='npu'):
    _checked_index(device)
    torch.default_generator.set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
