// SPDX-License-Identifier: GPL-2.0
/*
 * Folios (5.16+): FASTREMAP_IOC_MOVE re-homes folios with the folio API
 * and the swap cache's folio lookups. Older kernels (5.10, 5.15) have
 * pages only: there the module builds without MOVE (move_none.c).
 */
#include <linux/mm.h>
#include <linux/pagemap.h>
static bool __used fr_probe(struct page *p)
{
	struct folio *f = page_folio(p);

	folio_lock(f);
	folio_unlock(f);
	return folio_test_anon(f);
}
