// SPDX-License-Identifier: GPL-2.0
/* kmap_local_page() and kunmap_local() (5.11+). */
#include <linux/highmem.h>
static void __used fr_probe(struct page *p)
{
	void *k = kmap_local_page(p);

	kunmap_local(k);
}
