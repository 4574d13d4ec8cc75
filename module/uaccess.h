/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Copying the ioctls' structures in and out: a leaf the ioctls call,
 * which calls nothing of the module's.
 */
#ifndef FASTREMAP_UACCESS_H
#define FASTREMAP_UACCESS_H

#include <linux/types.h>
#include <linux/compiler_types.h>

/*
 * Copies in an extensible ioctl structure whose first u32 is the caller's
 * size (*@usize): fields the caller did not pass read as zero; a size
 * below @minsize, or fields this module does not know set, give EINVAL.
 */
int fr_copy_in(void *dst, size_t ksize, size_t minsize, void __user *src,
	       u32 *usize);
/*
 * fr_copy_in() of a request, then its own checks: flags outside @known,
 * or its padding or reserved words set, give EINVAL. Every request of
 * the ABI has them.
 */
#define fr_copy_request(req, minsize, uarg, usize, known) ({		\
	int __ret = fr_copy_in((req), sizeof(*(req)), (minsize), (uarg),	\
			       (usize));				\
	if (!__ret && fr_request_bad((req)->flags, (known), (req)->__pad0,	\
				     (req)->reserved,			\
				     sizeof((req)->reserved)))		\
		__ret = -EINVAL;					\
	__ret;								\
})
bool fr_request_bad(u32 flags, u32 known, u32 pad, const void *reserved,
		    size_t reserved_len);
/* copy_to_user() of @len bytes, with 8-byte stores when @len allows. */
int fr_copy_out(void __user *dst, const void *src, size_t len);

#endif /* FASTREMAP_UACCESS_H */
