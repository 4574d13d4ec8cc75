// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE on kernels without folios (before 5.16): declined.
 * Its page re-homing (move_pte.c) is written against the folio API and
 * the swap cache's folio lookups, which those kernels lack, so INFO
 * reports neither the feature nor the ioctl there, and the call gives
 * ENOTTY, as for any command this build does not have, without reading
 * its argument: callers (the library) then use their own moves.
 */
#include <linux/errno.h>
#include "move.h"

int fr_move_open(struct file *file)
{
	return 0;
}

void fr_move_release(struct file *file)
{
}

long fr_ioctl_move(struct file *file, void __user *uarg)
{
	return -ENOTTY;
}
