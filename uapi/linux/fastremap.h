/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fastremap: relocate page-table entries of the calling process.
 *
 * The ABI is shared by the kernel module and userspace. Every ioctl takes
 * a structure whose first field is its size in bytes, filled in by the
 * caller, so that a structure can grow at its end: the module accepts any
 * size from the first published one up to a page, treats fields beyond
 * the caller's size as zero, and fails with EINVAL when the caller sets
 * fields the module does not know.
 */
#ifndef _UAPI_LINUX_FASTREMAP_H
#define _UAPI_LINUX_FASTREMAP_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define FASTREMAP_DEVICE	"/dev/fastremap"

/* Raised on any incompatible change; compatible growth keeps it. */
#define FASTREMAP_ABI_VERSION	1

#define FASTREMAP_IOC_MAGIC	0xFB

/*
 * FASTREMAP_IOC_INFO: the handshake, in the spirit of UFFDIO_API.
 *
 * In:  size (sizeof the caller's struct), flags and reserved zero.
 * Out: abi_version, features (FASTREMAP_FEAT_*), ioctls (a bit per
 *      supported ioctl, by _IOC_NR: 1ULL << _IOC_NR(cmd)), size set to
 *      the number of bytes the module wrote.
 */
struct fastremap_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 __pad0;
	__u64 features;
	__u64 ioctls;
	__u64 reserved[4];
};

#define FASTREMAP_INFO_SIZE_VER0	64

/* Feature bits reported by FASTREMAP_IOC_INFO. */
/* The kernel has per-VMA locks; the module write-locks every VMA it touches. */
#define FASTREMAP_FEAT_PER_VMA_LOCK	(1ULL << 0)
/* Transparent huge pages are configured: PMD-mapped THPs move whole. */
#define FASTREMAP_FEAT_THP		(1ULL << 1)
/* Whole-PUD (1 GiB on x86-64) moves are possible on this kernel. */
#define FASTREMAP_FEAT_MOVE_PUD		(1ULL << 2)
/* FASTREMAP_IOC_MOVE is available (also its bit in fastremap_info.ioctls). */
#define FASTREMAP_FEAT_MOVE		(1ULL << 3)
/*
 * Each open of the device has a position of its own, fixed at open: a
 * random value in [1, 2^62), which lseek(2) reports and never changes. A
 * descriptor whose lseek(fd, 0, SEEK_CUR) gives that value refers to the
 * same open file, which one system call without side effects, copies or
 * security hooks can tell (libfastremap checks its descriptor so).
 */
#define FASTREMAP_FEAT_POS_COOKIE	(1ULL << 4)
/*
 * FASTREMAP_IOC_REMAP pins the pages of its request for the call and
 * writes the result there: a move that was made is always reported as a
 * success, never as EFAULT (see FASTREMAP_IOC_REMAP). A module without
 * this bit may report a completed move as EFAULT.
 */
#define FASTREMAP_FEAT_REMAP_PINNED	(1ULL << 5)
/*
 * The kernel's own mremap(2) moves whole PUD entries, one at a time with
 * a flush each, between ranges congruent modulo a PUD entry's span
 * (CONFIG_HAVE_MOVE_PUD: x86-64 and arm64 since Linux 5.11). Without it
 * mremap(2) moves such a range PMD entry by PMD entry; libfastremap
 * leaves a move to mremap(2) by its PUD entries only with this bit.
 */
#define FASTREMAP_FEAT_MREMAP_PUD	(1ULL << 6)

/*
 * FASTREMAP_IOC_REMAP: mremap(2) for the calling process, relocating whole
 * page-table entries where alignment allows and issuing one range TLB
 * flush for the relocation.
 *
 * In:  size, flags (none defined yet: zero), mremap_flags (MREMAP_MAYMOVE,
 *      MREMAP_FIXED, MREMAP_DONTUNMAP), old_addr, old_size, new_size,
 *      new_addr (read only with MREMAP_FIXED). Output fields are ignored
 *      on input; reserved and __pad0 must be zero.
 * Out: new_addr, where the memory now is; the moved_* counters and
 *      tlb_flushes describe what this call did. Returns 0.
 *
 * The result: the pages that hold this structure are pinned, writable,
 * before anything changes (EFAULT if they cannot be), and the result is
 * written to them after the move (FASTREMAP_FEAT_REMAP_PINNED). So a
 * move that was made is reported as a success whatever another thread
 * does meanwhile; if it unmaps or truncates those pages during the call,
 * the result goes to the pages as they were, where nobody reads it. (The
 * return value cannot carry the address instead: the ioctl system call
 * returns its handler's value as an int.)
 *
 * Errors are those mremap(2) gives for the same call on the same kernel,
 * plus EOPNOTSUPP below. Every error leaves the caller's memory as it
 * was, except these, which can follow a change:
 * ENOMEM: page tables for the destination could not be allocated part way
 *      through the move. What had moved was moved back, so the memory is
 *      at the source; but a MREMAP_FIXED target was already unmapped, and
 *      so was the tail of a shrinking move (mremap(2) on 6.x does the
 *      same). ENOMEM from creating the destination VMA, or from
 *      splitting one at the tail, likewise follows the unmap of the
 *      target (and of the tail). Without MREMAP_FIXED, ENOMEM leaves
 *      the memory as it was.
 * EFAULT, from a module without FASTREMAP_FEAT_REMAP_PINNED only: the
 *      move was made, but the result could not be written back (another
 *      thread unmapped or write-protected the page that holds this
 *      structure during the call). The memory is at the new address,
 *      which is lost unless MREMAP_FIXED gave it. (After unmapping a
 *      MREMAP_FIXED target and a shrinking move's tail the module looks
 *      the source up again and would fail with EFAULT were it gone; it
 *      cannot be: neither range contains old_addr.)
 * A structure that lies inside a range the call changes (the source, the
 * target) is never written: the call is declined instead (EOPNOTSUPP).
 * Errors that never follow a change include:
 * EOPNOTSUPP: a case the module does not handle (hugetlb, PFN or I/O
 *      mappings, userfaultfd-registered ranges, special mappings, KSM,
 *      mlocked growth, in-place expansion, a plain shrink, this structure
 *      inside the source or target...): nothing was changed; call
 *      mremap(2) instead.
 * EBADF: the descriptor was not opened for writing (moves need it; INFO
 *      does not): nothing was changed.
 * EINVAL: nonzero flags or reserved fields, besides mremap(2)'s own
 *      EINVAL cases.
 * EINTR: a fatal signal arrived while waiting for mmap_lock.
 */
struct fastremap_remap {
	__u32 size;
	__u32 flags;
	__u32 mremap_flags;
	__u32 __pad0;
	__u64 old_addr;
	__u64 old_size;
	__u64 new_size;
	__u64 new_addr;
	__u64 moved_pud;	/* whole PUD entries (tables of PMDs) moved */
	__u64 moved_pmd;	/* whole PTE tables moved */
	__u64 moved_thp;	/* PMD-mapped huge pages moved whole */
	__u64 moved_pte;	/* single PTEs moved */
	__u64 tlb_flushes;	/* range TLB flushes the relocation issued */
	/*
	 * arm64's contiguous-PTE blocks (64 KiB of a large folio with 4 KiB
	 * pages, 2 MiB with 16 KiB), counted in moved_pte too: moved whole
	 * and still contiguous at new_addr;
	 * or moved as single entries, because the range cuts the block or
	 * new_addr is not congruent with old_addr modulo the block. Always 0
	 * on x86-64.
	 */
	__u64 moved_contpte;
	__u64 unfolded_contpte;
	__u64 reserved[1];
};

#define FASTREMAP_REMAP_SIZE_VER0	112

/*
 * FASTREMAP_IOC_MOVE: many page moves inside existing private anonymous
 * mappings, in order, under one acquisition of the locks and with one TLB
 * flush per pass of up to 2^18 pages (so one for most batches; a page
 * that is busy for a moment ends a pass early), for compacting garbage
 * collectors and arena allocators. A batch of any size runs to its end or
 * to an error. No mapping is created, split, merged or removed:
 * /proc/self/maps is the same before and after. Pages move, not bytes:
 * each page's physical frame leaves the source for the destination, which
 * must be empty (never faulted in, or emptied by an earlier move or by
 * MADV_DONTNEED); the source is left empty (it reads as zeros and faults
 * in fresh pages again).
 *
 * Each move is {src, dst, len}: page-aligned, len > 0, [src, src + len)
 * inside one mapping and [dst, dst + len) inside one mapping (the same or
 * another), not overlapping each other. Within a batch no two sources
 * overlap and no two destinations overlap; a destination may reuse a
 * source of an earlier move (sliding compaction), and moves run in order.
 *
 * In:  size, flags (FASTREMAP_MOVE_*), moves (a user pointer to count
 *      struct fastremap_move_vec), count (at most FASTREMAP_MOVE_MAX).
 *      The vector is read once, before anything moves: it may lie
 *      anywhere, even inside a range it moves. This structure must lie
 *      outside every source and destination (EINVAL), because the result
 *      is written into it after the moves.
 * Out: done (moves completed), done_bytes (bytes of moves[done] already
 *      moved when the call stopped there), the moved_* and tlb_flushes
 *      counters. Written on success and on every error after the
 *      structure was read; after an error every page is at its source or
 *      at its destination, never lost or duplicated.
 *
 * Errors that change nothing (done = done_bytes = 0):
 * EINVAL: unknown flags, nonzero reserved fields, an unaligned, empty or
 *      overflowing range, a move whose source and destination overlap,
 *      two sources or two destinations overlapping, this structure inside
 *      a range; a mapping that is not private anonymous memory (file,
 *      shared, hugetlb, I/O or PFN maps, a shadow stack), is mlocked, or
 *      differs from the other side of the move in protection.
 * EFAULT: the vector cannot be read, or a range is not inside one mapping
 *      (unmapped, or spanning two).
 * E2BIG: count above FASTREMAP_MOVE_MAX.
 * EPERM: a mapping is sealed (mseal(2)).
 * EOPNOTSUPP: a mapping is registered with userfaultfd.
 * EXDEV: the source and destination mappings of a move have anon_vmas of
 *      different roots (mappings never related by a split of one mapping
 *      or by merging): the moved pages could not be found by reverse
 *      mapping there. Use one mapping for the heap.
 * EBADF: the descriptor was not opened for writing.
 * Errors that stop the batch at moves[done] (done_bytes of it moved):
 * EEXIST: the destination page is populated.
 * ENOENT: the source page is a hole (never faulted in, or moved away),
 *      unless FASTREMAP_MOVE_ALLOW_HOLES: then the destination stays a hole.
 * EBUSY: the page is not exclusive to this process (shared with a child
 *      after fork(2), KSM, pinned by get_user_pages, a swap entry shared
 *      after fork(2)), or a large folio could not be split.
 * EAGAIN: the page stayed under migration, or locked, too long: retry.
 * EXDEV: (kernels before 6.8, which have no UFFDIO_MOVE) the page belongs
 *      to an anon_vma the destination mapping's does not descend from:
 *      in a forked child, a page it wrote in one inherited mapping moved
 *      to another (their reverse-map walkers assume a mapped page's
 *      anon_vma only ever becomes a descendant of it).
 * ENOMEM: page tables for the destination could not be allocated.
 * EINTR: a fatal signal arrived while waiting.
 * EFAULT: the moves were made but the result could not be written (another
 *      thread unmapped this structure during the call).
 */
struct fastremap_move_vec {
	__u64 src;
	__u64 dst;
	__u64 len;
};

/* A hole in a source is skipped (the destination stays a hole), not ENOENT. */
#define FASTREMAP_MOVE_ALLOW_HOLES	(1U << 0)

/* The largest count one call takes. */
#define FASTREMAP_MOVE_MAX		65536

struct fastremap_move {
	__u32 size;
	__u32 flags;
	__u64 moves;		/* struct fastremap_move_vec[count] */
	__u32 count;
	__u32 __pad0;
	__u64 done;		/* out: moves completed */
	__u64 done_bytes;	/* out: bytes of moves[done] moved */
	__u64 moved_pte;	/* out: PTEs moved (holes skipped are not counted) */
	__u64 moved_thp;	/* out: PMD-mapped huge pages moved whole */
	__u64 split;		/* out: large folios split first */
	__u64 tlb_flushes;	/* out: range TLB flushes issued */
	__u64 reserved[4];
};

#define FASTREMAP_MOVE_SIZE_VER0	104

#define FASTREMAP_IOC_INFO	_IOWR(FASTREMAP_IOC_MAGIC, 0x00, struct fastremap_info)
#define FASTREMAP_IOC_REMAP	_IOWR(FASTREMAP_IOC_MAGIC, 0x01, struct fastremap_remap)
#define FASTREMAP_IOC_MOVE	_IOWR(FASTREMAP_IOC_MAGIC, 0x02, struct fastremap_move)

#endif /* _UAPI_LINUX_FASTREMAP_H */
