/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: convolution and pooling (docs/dispatcher.md). */
#include "../op_util.h"
