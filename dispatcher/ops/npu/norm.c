/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): softmax, layer norm (docs/dispatcher.md). */
#include "npu_util.h"
