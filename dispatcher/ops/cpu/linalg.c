/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: bmm, addmm (docs/dispatcher.md). */
#include "../op_util.h"
