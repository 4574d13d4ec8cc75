// SPDX-License-Identifier: GPL-2.0
/*
 * UFFDIO_MOVE (6.8+). The series that brought it also taught the rmap
 * walkers that lock a folio's anon_vma without the folio lock
 * (folio_lock_anon_vma_read()) to look at folio->mapping again once the
 * lock is held, because UFFDIO_MOVE may give a mapped folio any anon_vma:
 * the module relies on that re-check where this compiles.
 */
#include <linux/ioctl.h>
#include <linux/userfaultfd.h>
static unsigned int __used fr_probe = UFFDIO_MOVE;
