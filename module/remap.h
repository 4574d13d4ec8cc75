/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FASTREMAP_REMAP_H
#define FASTREMAP_REMAP_H

#include <linux/types.h>

long fr_ioctl_remap(void __user *uarg);

/* Copies in an extensible ioctl structure; see main.c. */
int fr_copy_in(void *dst, size_t ksize, size_t minsize, void __user *src,
	       u32 *usize);
int fr_copy_out(void __user *dst, const void *src, size_t len);

#endif /* FASTREMAP_REMAP_H */
