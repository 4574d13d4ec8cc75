// SPDX-License-Identifier: GPL-2.0
/* 6.10+: get_unmapped_area() is an inline over __get_unmapped_area(). */
#include <linux/mm.h>
static unsigned long __used fr_probe(struct file *f)
{
	return __get_unmapped_area(f, 0, 4096, 0, 0, 0);
}
