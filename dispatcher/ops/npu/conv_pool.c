/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): convolution and pooling (docs/dispatcher.md). */
#include "npu_util.h"
