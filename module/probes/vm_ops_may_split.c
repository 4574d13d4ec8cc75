// SPDX-License-Identifier: GPL-2.0
/* vm_operations_struct's split became may_split in 5.11. */
#include <linux/mm.h>
static const struct vm_operations_struct fr_probe_ops __used = {
	.may_split = NULL,
};
