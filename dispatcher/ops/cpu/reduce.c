/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: reductions (docs/dispatcher.md). */
#include "../op_util.h"
