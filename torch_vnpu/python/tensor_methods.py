# SPDX-License-Identifier: MIT
"""Tensor methods of PyTorch 1.13 that refuse a device they do not know.

Tensor.new (the legacy constructor, still used by PyTorch's own
torch.testing.make_non_contiguous and by older models) checks its device
against a fixed list without PrivateUse1 ("new(): expected key in
DispatchKeySet(CPU, CUDA, ...)"). For privateuseone tensors it is
provided here with the legacy semantics; other tensors keep PyTorch's.
torch_npu patches its device into such methods the same way.
"""
import numbers

import torch

DEVICE_TYPE = 'privateuseone'
_legacy_new = torch.Tensor.new


def _is_size(args):
    if len(args) == 1 and isinstance(args[0], torch.Size):
        return True
    return all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
               for a in args)


def _new(self, *args, **kwargs):
    if self.device.type != DEVICE_TYPE:
        return _legacy_new(self, *args, **kwargs)
    device = kwargs.pop('device', None)
    if kwargs:
        raise TypeError('new() got an unexpected keyword argument %r'
                        % next(iter(kwargs)))
    device = self.device if device is None else torch.device(device)
    if device.type != DEVICE_TYPE:
        raise RuntimeError('new(): expected device %s but got %s'
                           % (DEVICE_TYPE, device.type))
    if not args:
        return torch.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], torch.Tensor):
        other = args[0]
        if other.dtype != self.dtype or other.device.type != DEVICE_TYPE:
            raise TypeError('expected %s (got %s)' % (
                self.type(), other.type()))
        return torch.ops.aten.alias(other)
    if _is_size(args):
        return torch.empty(tuple(args[0]) if isinstance(args[0], torch.Size)
                           else args, dtype=self.dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], (torch.TypedStorage,
                                                   torch.UntypedStorage)):
        # a single sequence that is not a torch.Size: the data
        return torch.tensor(args[0], dtype=self.dtype, device=device)
    raise TypeError('new() received an invalid combination of arguments: '
                    'sizes, a sequence of data or a tensor of the same '
                    'type (no storages on %s)' % DEVICE_TYPE)


_new.__doc__ = _legacy_new.__doc__
torch.Tensor.new = _new
