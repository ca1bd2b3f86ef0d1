/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: embedding, cat, index_select (docs/dispatcher.md). */
#include "../op_util.h"
