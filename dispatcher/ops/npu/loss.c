/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): losses and the backward ops (docs/dispatcher.md). */
#include "npu_util.h"
