/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FASTREMAP_REMAP_H
#define FASTREMAP_REMAP_H

#include <linux/compiler_types.h>

/* FASTREMAP_IOC_REMAP: mremap(2) for the calling process. */
long fr_ioctl_remap(void __user *uarg);

#endif /* FASTREMAP_REMAP_H */
