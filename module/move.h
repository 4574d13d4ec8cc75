/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FASTREMAP_MOVE_H
#define FASTREMAP_MOVE_H

#include <linux/types.h>

struct file;

/* What an open file of the device keeps: FASTREMAP_IOC_MOVE's vector buffer. */
int fr_move_open(struct file *file);
void fr_move_release(struct file *file);

/* FASTREMAP_IOC_MOVE: a batch of page moves inside existing VMAs. */
long fr_ioctl_move(struct file *file, void __user *uarg);

#endif /* FASTREMAP_MOVE_H */
