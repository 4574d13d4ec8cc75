// SPDX-License-Identifier: GPL-2.0
/*
 * Copying the ioctls' structures in and out of user memory.
 */
#include <linux/uaccess.h>
#include <linux/string.h>
#include "uaccess.h"

/*
 * @len bytes (a multiple of 8) between @k and user memory at @u, with
 * 8-byte loads or stores in one user-access window. copy_from_user() and
 * copy_to_user() are a "rep movsb" on x86 CPUs with fast short moves,
 * which QEMU's TCG runs a byte at a time, about a microsecond per
 * request structure.
 */
static __always_inline int fr_copy_words(u64 *k, u64 __user *u, size_t len,
					 bool to_user)
{
	size_t i;

	if (!user_access_begin(u, len))
		return -EFAULT;
	for (i = 0; i < len / sizeof(u64); i++) {
		if (to_user)
			unsafe_put_user(k[i], &u[i], efault);
		else
			unsafe_get_user(k[i], &u[i], efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * Copies an extensible ioctl structure in: its first u32 is the caller's
 * size. Fields the caller did not pass read as zero; a caller that sets
 * fields this module does not know gets EINVAL, as does a size below the
 * first published one.
 */
int fr_copy_in(void *dst, size_t ksize, size_t minsize, void __user *src,
	       u32 *usize)
{
	int ret;

	if (get_user(*usize, (u32 __user *)src))
		return -EFAULT;
	if (*usize < minsize || *usize > PAGE_SIZE)
		return -EINVAL;
	if (*usize != ksize || !IS_ALIGNED(ksize, sizeof(u64))) {
		ret = copy_struct_from_user(dst, ksize, src, *usize);
		return ret == -E2BIG ? -EINVAL : ret;
	}
	/* The caller's size is ours (the common case). */
	return fr_copy_words(dst, src, ksize, false);
}

/* copy_to_user() of @len bytes, with 8-byte stores when @len allows. */
int fr_copy_out(void __user *dst, const void *src, size_t len)
{
	if (!IS_ALIGNED(len, sizeof(u64)) || !IS_ALIGNED((unsigned long)src, sizeof(u64)))
		return copy_to_user(dst, src, len) ? -EFAULT : 0;
	return fr_copy_words((u64 *)src, dst, len, true);
}

bool fr_request_bad(u32 flags, u32 known, u32 pad, const void *reserved,
		    size_t reserved_len)
{
	return (flags & ~known) || pad || memchr_inv(reserved, 0, reserved_len);
}
