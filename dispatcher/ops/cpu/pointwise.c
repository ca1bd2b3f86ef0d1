/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: pointwise ops and comparisons (docs/dispatcher.md). */
#include "../op_util.h"
