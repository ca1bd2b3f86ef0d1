# SPDX-License-Identifier: MIT
"""The privateuseone device type of PyTorch's device-generic tests.

common_device_type executes this file (runpy, with its own globals) for
every path in TORCH_TEST_DEVICES, as torch_xla adds its device, and adds
TEST_CLASS to the device types it instantiates test classes for. The
classes then run on the vnpu device through torch_vnpu.
"""
import unittest

import torch
import torch.testing._internal.common_device_type as cdt

import torch_vnpu  # noqa: F401  (registers the device)

# dtypes the device has no storage for (docs/torch.md): their tests are
# skipped with this reason, never counted as failures
UNSUPPORTED_DTYPES = {
    torch.complex32, torch.complex64, torch.complex128, torch.int16,
    torch.quint8, torch.qint8, torch.qint32, torch.quint4x2,
}

# An out-of-tree backend is a native device to these tests: without it
# every @onlyNativeDeviceTypes test would be skipped here.
cdt.NATIVE_DEVICES = tuple(cdt.NATIVE_DEVICES) + ('privateuseone',)


def _dtypes_of(param_kwargs):
    d = param_kwargs.get('dtypes', param_kwargs.get('dtype'))
    if isinstance(d, (list, tuple)):
        return list(d)
    return [d] if d is not None else []


class PrivateUse1TestBase(cdt.DeviceTypeTestBase):
    device_type = 'privateuseone'
    primary_device = 'privateuseone:0'

    @classmethod
    def get_primary_device(cls):
        return cls.primary_device

    @classmethod
    def get_all_devices(cls):
        return [cls.primary_device]   # one device per process

    def _should_stop_test_suite(self):
        # One failing test must not end the class: each is reported.
        return False

    def _apply_precision_override_for_test(self, test, param_kwargs):
        for d in _dtypes_of(param_kwargs):
            if d in UNSUPPORTED_DTYPES:
                raise unittest.SkipTest('vnpu: no %s on this device' % d)
        super()._apply_precision_override_for_test(test, param_kwargs)


TEST_CLASS = PrivateUse1TestBase
