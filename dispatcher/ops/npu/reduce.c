/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): reductions (docs/dispatcher.md). */
#include "npu_util.h"
