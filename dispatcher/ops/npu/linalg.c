/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): bmm, addmm (docs/dispatcher.md). */
#include "npu_util.h"
