/* SPDX-License-Identifier: MIT */
/*
 * The vnpu accel nodes: /dev/accel/accel<minor> whose DRM driver is vnpu.
 * Shared by the drm backend and this tree's programs that speak to the
 * driver directly (vnpu-smi, bench-drm); not part of libvnpurt's ABI.
 */
#ifndef VNPURT_DRM_NODE_H
#define VNPURT_DRM_NODE_H

/* The most accel nodes looked at. */
#define VNPURT_DRM_MAX_NODES 64

/* Opens /dev/accel/accel<minor> read-write, close-on-exec, when its DRM
 * driver is vnpu: the fd, or -1 with errno (ENODEV: another driver). */
int vnpurt_drm_node_open(int minor);
/* The minors of /dev/accel/accel* of any driver, ascending: their count,
 * at most max (0 without /dev/accel). */
int vnpurt_drm_node_minors(int *minors, int max);

#endif /* VNPURT_DRM_NODE_H */
