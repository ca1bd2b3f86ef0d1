// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: resource limits (docs/uapi.md, "Limits").
 *
 * One user, the effective uid that opened the file, may hold at most a
 * share of the device's hardware contexts, all of its VRAM but a reserve
 * for the others, and a share of the machine's RAM pinned as system BOs
 * and device page tables, so that no user locks the others out or drives
 * the machine into the OOM killer. A file opened with
 * CAP_SYS_ADMIN is counted but not held to these shares, as CAP_IPC_LOCK
 * lifts RLIMIT_MEMLOCK. Each file may also have at most a number of
 * unfinished jobs, and of kernel memory in them (their commands, their BO
 * lists, the job itself).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "vnpu_drv.h"

static uint vnpu_user_context_share = 50;
module_param_named(user_context_share, vnpu_user_context_share, uint, 0644);
MODULE_PARM_DESC(user_context_share,
		 "Percent of the hardware contexts (open files) one user may hold (default 50; 100: no limit)");

static uint vnpu_user_vram_reserve = 13;
module_param_named(user_vram_reserve, vnpu_user_vram_reserve, uint, 0644);
MODULE_PARM_DESC(user_vram_reserve,
		 "Percent of VRAM one user's BOs may not take, kept for the others (default 13; 0: no limit)");

static uint vnpu_user_pinned_share = 25;
module_param_named(user_pinned_share, vnpu_user_pinned_share, uint, 0644);
MODULE_PARM_DESC(user_pinned_share,
		 "Percent of RAM one user's system BOs may pin (default 25; 100: no limit)");

static uint vnpu_file_max_jobs = 1024;
module_param_named(file_max_jobs, vnpu_file_max_jobs, uint, 0644);
MODULE_PARM_DESC(file_max_jobs,
		 "Unfinished jobs per open file, over all its queues (default 1024)");

static uint vnpu_file_job_bytes = 4 << 20;
module_param_named(file_job_bytes, vnpu_file_job_bytes, uint, 0644);
MODULE_PARM_DESC(file_job_bytes,
		 "Kernel memory the unfinished jobs of an open file may hold, each counted as DRM_VNPU_JOB_BYTES (default 4 MiB)");

/* The UAPI's job cost counts the copied commands and BO pointers. */
static_assert(DRM_VNPU_JOB_BYTES(1, 0) - DRM_VNPU_JOB_BYTES(0, 0) ==
	      VNPU_CMD_SIZE);
static_assert(DRM_VNPU_JOB_BYTES(0, 1) - DRM_VNPU_JOB_BYTES(0, 0) ==
	      sizeof(struct drm_gem_object *));

/* share percent of total, at least 1 unit; U64_MAX when unlimited. */
static u64 vnpu_share_of(uint share, u64 total)
{
	share = READ_ONCE(share);
	if (share >= 100)
		return U64_MAX;
	return max_t(u64, 1, div_u64(total * share, 100));
}

static u64 vnpu_user_limit(struct vnpu_device *vdev, enum vnpu_quota_res res)
{
	switch (res) {
	case VNPU_QUOTA_CONTEXTS:
		return vnpu_share_of(vnpu_user_context_share,
				     vdev->num_contexts);
	case VNPU_QUOTA_VRAM:
		/*
		 * All but a reserve: a lone user gets most of the device, and
		 * whatever it holds another user can still have the reserve.
		 */
		return vnpu_share_of(100 - min(READ_ONCE(vnpu_user_vram_reserve),
					       100U),
				     vdev->vram_size);
	case VNPU_QUOTA_PINNED:
		return vnpu_share_of(vnpu_user_pinned_share,
				     (u64)totalram_pages() << PAGE_SHIFT);
	default:
		return 0;
	}
}

void vnpu_quota_init(struct vnpu_device *vdev)
{
	mutex_init(&vdev->users_lock);
	xa_init(&vdev->users);
}

void vnpu_quota_fini(struct vnpu_device *vdev)
{
	WARN_ON(!xa_empty(&vdev->users));
	xa_destroy(&vdev->users);
	mutex_destroy(&vdev->users_lock);
}

/* The caller's user (its effective uid), with a reference. */
struct vnpu_user *vnpu_user_get_current(struct vnpu_device *vdev)
{
	unsigned long key = __kuid_val(current_euid());
	struct vnpu_user *user;
	int ret;

	mutex_lock(&vdev->users_lock);
	user = xa_load(&vdev->users, key);
	if (user) {
		user->refs++;
		goto out;
	}
	user = kzalloc(sizeof(*user), GFP_KERNEL);
	if (!user) {
		user = ERR_PTR(-ENOMEM);
		goto out;
	}
	user->vdev = vdev;
	user->uid = current_euid();
	user->refs = 1;
	ret = xa_err(xa_store(&vdev->users, key, user, GFP_KERNEL));
	if (ret) {
		kfree(user);
		user = ERR_PTR(ret);
	}
out:
	mutex_unlock(&vdev->users_lock);
	return user;
}

void vnpu_user_get(struct vnpu_user *user)
{
	mutex_lock(&user->vdev->users_lock);
	user->refs++;
	mutex_unlock(&user->vdev->users_lock);
}

void vnpu_user_put(struct vnpu_user *user)
{
	struct vnpu_device *vdev = user->vdev;

	mutex_lock(&vdev->users_lock);
	if (!--user->refs) {
		WARN_ON(user->used[VNPU_QUOTA_CONTEXTS] ||
			user->used[VNPU_QUOTA_VRAM] ||
			user->used[VNPU_QUOTA_PINNED]);
		xa_erase(&vdev->users, __kuid_val(user->uid));
		kfree(user);
	}
	mutex_unlock(&vdev->users_lock);
}

/* Whether amount more of res takes a non-exempt file's user past its share. */
static bool vnpu_quota_over(struct vnpu_user *user, bool exempt,
			    enum vnpu_quota_res res, u64 amount)
{
	u64 limit = vnpu_user_limit(user->vdev, res);

	lockdep_assert_held(&user->vdev->users_lock);
	return !exempt && (amount > limit || user->used[res] > limit - amount);
}

/*
 * Counts amount of res against the user; -EDQUOT (nothing counted) when
 * that would pass the user's share and the file is not exempt.
 */
int vnpu_quota_charge(struct vnpu_user *user, bool exempt,
		      enum vnpu_quota_res res, u64 amount)
{
	struct vnpu_device *vdev = user->vdev;
	int ret = 0;

	mutex_lock(&vdev->users_lock);
	if (vnpu_quota_over(user, exempt, res, amount))
		ret = -EDQUOT;
	else
		user->used[res] += amount;
	mutex_unlock(&vdev->users_lock);
	return ret;
}

/*
 * Whether amount more of res would pass the user's share now: BO_CREATE
 * asks before it allocates (and scrubs) memory the charge at the first
 * handle would refuse anyway, and so answers -EDQUOT before -ENOMEM.
 */
bool vnpu_quota_exceeded(struct vnpu_user *user, bool exempt,
			 enum vnpu_quota_res res, u64 amount)
{
	bool over;

	mutex_lock(&user->vdev->users_lock);
	over = vnpu_quota_over(user, exempt, res, amount);
	mutex_unlock(&user->vdev->users_lock);
	return over;
}

void vnpu_quota_uncharge(struct vnpu_user *user, enum vnpu_quota_res res,
			 u64 amount)
{
	struct vnpu_device *vdev = user->vdev;

	mutex_lock(&vdev->users_lock);
	if (!WARN_ON(user->used[res] < amount))
		user->used[res] -= amount;
	mutex_unlock(&vdev->users_lock);
}

/* GET_PARAM QUOTA_LIMIT, QUOTA_USED, FILE_MAX_JOBS, FILE_JOB_BYTES. */
int vnpu_quota_param(struct vnpu_ctx *ctx, u32 param, u32 index, u64 *value)
{
	struct vnpu_device *vdev = ctx->vdev;

	switch (param) {
	case DRM_VNPU_PARAM_QUOTA_LIMIT:
	case DRM_VNPU_PARAM_QUOTA_USED:
		if (index >= VNPU_QUOTA_RES_COUNT)
			return -EINVAL;
		if (param == DRM_VNPU_PARAM_QUOTA_LIMIT) {
			*value = ctx->quota_exempt ? U64_MAX
						   : vnpu_user_limit(vdev,
								     index);
			return 0;
		}
		mutex_lock(&vdev->users_lock);
		*value = ctx->user->used[index];
		mutex_unlock(&vdev->users_lock);
		return 0;
	case DRM_VNPU_PARAM_FILE_MAX_JOBS:
	case DRM_VNPU_PARAM_FILE_JOB_BYTES:
		if (index)
			return -EINVAL;
		if (param == DRM_VNPU_PARAM_FILE_MAX_JOBS)
			*value = READ_ONCE(vnpu_file_max_jobs);
		else
			*value = READ_ONCE(vnpu_file_job_bytes);
		return 0;
	default:
		return -EINVAL;
	}
}

/* At open: whether the file is held to the per-user shares. */
bool vnpu_quota_exempt_current(void)
{
	return capable(CAP_SYS_ADMIN);
}

/*
 * SUBMIT: counts a job of `bytes` (DRM_VNPU_JOB_BYTES) against the file;
 * -EBUSY (nothing counted) when the file is at a limit, until some of its
 * jobs end.
 */
int vnpu_ctx_charge_job(struct vnpu_ctx *ctx, u64 bytes)
{
	long jobs = atomic_long_inc_return(&ctx->unfinished_jobs);
	long total = atomic_long_add_return(bytes, &ctx->unfinished_bytes);

	if (jobs > READ_ONCE(vnpu_file_max_jobs) ||
	    total > READ_ONCE(vnpu_file_job_bytes)) {
		vnpu_ctx_uncharge_job(ctx, bytes);
		return -EBUSY;
	}
	return 0;
}

/* The job ended or was never pushed (any context, IRQ included). */
void vnpu_ctx_uncharge_job(struct vnpu_ctx *ctx, u64 bytes)
{
	atomic_long_dec(&ctx->unfinished_jobs);
	atomic_long_sub(bytes, &ctx->unfinished_bytes);
}
