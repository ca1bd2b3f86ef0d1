#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints what building against the installed PyTorch's C++ API takes, as
that torch reports it (meson has no pkg-config file for it):
  torch_config.py cflags   compile flags, one per line
  torch_config.py libdir   the directory of libtorch, libc10, ...
  torch_config.py version  torch's version (major.minor.patch)"""
import sys

import torch
import torch.utils.cpp_extension as ext

what = sys.argv[1] if len(sys.argv) > 1 else 'cflags'
if what == 'cflags':
    for p in ext.include_paths():
        print('-isystem' + p)
    print('-D_GLIBCXX_USE_CXX11_ABI=%d' % int(torch._C._GLIBCXX_USE_CXX11_ABI))
elif what == 'libdir':
    print(ext.library_paths()[0])
elif what == 'version':
    print(torch.__version__.split('+')[0])
else:
    sys.exit('torch_config.py: unknown query ' + what)
