/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FASTREMAP_MOVE_H
#define FASTREMAP_MOVE_H

#include <linux/types.h>

/* FASTREMAP_IOC_MOVE: a batch of page moves inside existing VMAs. */
long fr_ioctl_move(void __user *uarg);

#endif /* FASTREMAP_MOVE_H */
