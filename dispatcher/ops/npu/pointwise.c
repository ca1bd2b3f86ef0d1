/* SPDX-License-Identifier: MIT */
/* NPU kernels (PrivateUse1): pointwise ops and comparisons (docs/dispatcher.md). */
#include "npu_util.h"
