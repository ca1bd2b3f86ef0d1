/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: softmax, layer norm, batch norm (docs/dispatcher.md). */
#include "../op_util.h"
