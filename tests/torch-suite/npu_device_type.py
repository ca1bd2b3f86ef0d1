# SPDX-License-Identifier: MIT
"""The npu device type of PyTorch's device-generic tests (PyTorch 2).

common_device_type executes this file (runpy) for every path in
TORCH_TEST_DEVICES, as torch_xla adds its device, and adds TEST_CLASS to
the device types it instantiates test classes for. TEST_CLASS is PyTorch's
own PrivateUse1TestBase (device type "privateuse1", which PyTorch maps to
the backend's name, `npu`, in test names and in PYTORCH_TESTING_DEVICE_*)
with the few changes this device needs; PyTorch's own base is taken out
of the list so that each class is instantiated once.
"""
import unittest

import torch
import torch.testing._internal.common_device_type as cdt
import torch.testing._internal.common_utils as common_utils

import torch_vnpu  # noqa: F401  (registers the device as npu)

# dtypes the device has no storage for (docs/torch.md): their tests are
# skipped with this reason, never counted as failures
UNSUPPORTED_DTYPES = {
    torch.quint8, torch.qint8, torch.qint32, torch.quint4x2,
}

# An out-of-tree backend is a native device to these tests. PyTorch adds
# the backend's name to NATIVE_DEVICES when common_utils is imported; the
# test file imported it before torch_vnpu renamed the backend.
_NAME = torch._C._get_privateuse1_backend_name()
for _mod in (cdt, common_utils):
    if _NAME not in _mod.NATIVE_DEVICES:
        _mod.NATIVE_DEVICES = tuple(_mod.NATIVE_DEVICES) + (_NAME,)


def _dtypes_of(param_kwargs):
    d = param_kwargs.get('dtypes', param_kwargs.get('dtype'))
    if isinstance(d, (list, tuple)):
        return list(d)
    return [d] if d is not None else []


class NPUTestBase(cdt.PrivateUse1TestBase):
    @classmethod
    def get_all_devices(cls):
        return [cls.get_primary_device()]   # one device per process

    def _should_stop_test_suite(self):
        # One failing test must not end the class: each is reported.
        return False

    def _apply_precision_override_for_test(self, test, param_kwargs):
        for d in _dtypes_of(param_kwargs):
            if d in UNSUPPORTED_DTYPES:
                raise unittest.SkipTest('vnpu: no %s on this device' % d)
        super()._apply_precision_override_for_test(test, param_kwargs)


cdt.device_type_test_bases[:] = [
    b for b in cdt.device_type_test_bases if b is not cdt.PrivateUse1TestBase]
TEST_CLASS = NPUTestBase
