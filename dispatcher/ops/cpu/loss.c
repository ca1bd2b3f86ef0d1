/* SPDX-License-Identifier: MIT */
/* CPU reference kernels: losses and the backward ops (docs/dispatcher.md). */
#include "../op_util.h"
