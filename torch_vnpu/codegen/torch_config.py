#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints the compile flags of PyTorch's C++ API, one per line, as the
installed torch reports them (meson has no pkg-config file for it)."""
import torch
import torch.utils.cpp_extension as ext

for p in ext.include_paths():
    print('-isystem' + p)
print('-D_GLIBCXX_USE_CXX11_ABI=%d' % int(torch._C._GLIBCXX_USE_CXX11_ABI))
