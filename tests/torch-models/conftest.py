# SPDX-License-Identifier: MIT
import os

# vit_b_16's weights, gradients and AdamW's two moments are 1.4 GB: more
# than the simulator's default 1 GiB of device memory
os.environ.setdefault("VNPU_SIM_VRAM_MB", "4096")
