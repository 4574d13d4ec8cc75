/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libfastremap: mremap(2) that relocates whole page-table entries through
 * /dev/fastremap, with one TLB flush per call, and falls back to the
 * mremap system call wherever the module is missing, not accessible, or
 * declines a case. See fastremap(3), fastremap_remap(3), fastremap_info(3).
 *
 * The flags are mremap(2)'s: MREMAP_MAYMOVE, MREMAP_FIXED and
 * MREMAP_DONTUNMAP from <sys/mman.h> (with _GNU_SOURCE) or <linux/mman.h>.
 *
 * Every structure here starts with its size in bytes, set by the caller
 * to sizeof the structure it was built with, so that structures can grow
 * at their end without breaking older or newer callers.
 */
#ifndef FASTREMAP_H
#define FASTREMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * fastremap(): mremap(2)'s contract exactly. Returns the new address, or
 * MAP_FAILED with errno set as mremap(2) would set it. new_address (the
 * fifth argument) is read only with MREMAP_FIXED or MREMAP_DONTUNMAP.
 * errno is left unchanged on success.
 */
void *fastremap(void *old_address, size_t old_size, size_t new_size,
		int flags, ... /* void *new_address */);

/* fr_flags of fastremap_remap(). */
/* Never call mremap(2): report why the module could not be used instead. */
#define FASTREMAP_NO_FALLBACK	(1u << 0)
/* Skip the module and call mremap(2) (for comparisons and benchmarks). */
#define FASTREMAP_MREMAP_ONLY	(1u << 1)
/*
 * Try the module first whatever the call: no routing of calls that
 * mremap(2) makes as fast (see fastremap_remap(3), ROUTING).
 */
#define FASTREMAP_NO_ROUTING	(1u << 2)

/* Why a call went to mremap(2) rather than the module: stats->reason. */
enum fastremap_reason {
	FASTREMAP_REASON_NONE = 0,	/* the module handled the call */
	FASTREMAP_REASON_NO_DEVICE,	/* no /dev/fastremap: module not loaded */
	FASTREMAP_REASON_NO_ACCESS,	/* open(2): EACCES or EPERM */
	FASTREMAP_REASON_OPEN_FAILED,	/* open(2) failed otherwise (EMFILE...) */
	FASTREMAP_REASON_ABI,		/* the module's ABI is not one we speak */
	FASTREMAP_REASON_DECLINED,	/* the module declined the case */
	FASTREMAP_REASON_FLAGS,		/* mremap flags the module does not know */
	FASTREMAP_REASON_CALLER,	/* FASTREMAP_MREMAP_ONLY was passed */
	FASTREMAP_REASON_FD_LOST,	/* our descriptor vanished during the call */
	FASTREMAP_REASON_IOCTL_ERROR,	/* the remap ioctl failed: reason_errno */
	/* Routed to mremap(2) without asking the module (fastremap_remap(3)): */
	FASTREMAP_REASON_NOT_A_MOVE,	/* no MREMAP_MAYMOVE, a shrink, or the same size */
	FASTREMAP_REASON_FEW_EXTENTS,	/* at most 4 extents (mremap_extents): one flush each */
	FASTREMAP_REASON_IN_PLACE	/* growth mremap(2) made in place */
};

/*
 * What one fastremap_remap() call did. Set size to sizeof(struct
 * fastremap_stats) before the call; the library writes at most that many
 * bytes, zeroes what it does not know, and sets size to what it wrote.
 */
struct fastremap_stats {
	uint32_t size;
	int used_module;	/* 1: the module answered (success or error); 0: mremap(2) */
	int reason;		/* enum fastremap_reason, when used_module is 0 */
	int reason_errno;	/* errno behind reason (open(2)'s, EOPNOTSUPP...), or 0 */
	uint64_t moved_pud;	/* whole PUD entries (1 GiB; 64 GiB at 16 KiB pages) moved */
	uint64_t moved_pmd;	/* whole PTE tables (2 MiB of PTEs; 32 MiB) moved */
	uint64_t moved_thp;	/* PMD-mapped transparent huge pages moved whole */
	uint64_t moved_pte;	/* single PTEs moved */
	uint64_t tlb_flushes;	/* range TLB flushes the relocation issued */
	/*
	 * The library's bound on the extents (at most 2 MiB with 4 KiB
	 * pages, 32 MiB with 16 KiB, or a whole PUD entry: 1 GiB, 64 GiB)
	 * mremap(2) would move this call in, paying a TLB flush for each; 0
	 * when the call was not a move it estimated.
	 */
	uint64_t mremap_extents;
	/*
	 * arm64's contiguous-PTE blocks (64 KiB of a large folio; 2 MiB
	 * with 16 KiB pages), counted in moved_pte too: moved whole and
	 * still contiguous; moved as single entries (cut by the range, or a
	 * destination not congruent modulo the block). Always 0 on x86-64
	 * and without the module.
	 */
	uint64_t moved_contpte;
	uint64_t unfolded_contpte;
};

#define FASTREMAP_STATS_SIZE_VER0	56
#define FASTREMAP_STATS_SIZE_VER1	64
#define FASTREMAP_STATS_SIZE_VER2	80

/*
 * The native call: mremap(2)'s arguments (new_addr is used as mremap(2)
 * uses it: the destination with MREMAP_FIXED, a hint with
 * MREMAP_DONTUNMAP alone, ignored otherwise). Returns 0 and stores the
 * new address in *result (if result is not NULL), or a negative errno:
 * mremap(2)'s errors, plus with FASTREMAP_NO_FALLBACK -ENODEV (no usable
 * device), -EACCES/-EPERM (no access), -EOPNOTSUPP (declined), or open(2)'s
 * error. stats may be NULL. errno is left unchanged.
 */
long fastremap_remap(void *old_addr, size_t old_size, size_t new_size,
		     int flags, void *new_addr, unsigned int fr_flags,
		     struct fastremap_stats *stats, void **result);

/* Feature bits (same values as <linux/fastremap.h>'s). */
#ifndef FASTREMAP_FEAT_PER_VMA_LOCK
#define FASTREMAP_FEAT_PER_VMA_LOCK	(1ULL << 0)
#endif
#ifndef FASTREMAP_FEAT_THP
#define FASTREMAP_FEAT_THP		(1ULL << 1)
#endif
#ifndef FASTREMAP_FEAT_MOVE_PUD
#define FASTREMAP_FEAT_MOVE_PUD		(1ULL << 2)
#endif
#ifndef FASTREMAP_FEAT_MOVE
#define FASTREMAP_FEAT_MOVE		(1ULL << 3)
#endif

/* Bits of fastremap_abi_info.ioctls: 1 << _IOC_NR(command). */
#define FASTREMAP_IOCTL_BIT_INFO	(1ULL << 0)
#define FASTREMAP_IOCTL_BIT_REMAP	(1ULL << 1)
#define FASTREMAP_IOCTL_BIT_MOVE	(1ULL << 2)

/*
 * The device's handshake (FASTREMAP_IOC_INFO). Set size to
 * sizeof(struct fastremap_abi_info) before the call.
 */
struct fastremap_abi_info {
	uint32_t size;
	uint32_t abi_version;	/* the module's ABI version */
	uint64_t features;	/* FASTREMAP_FEAT_* */
	uint64_t ioctls;	/* FASTREMAP_IOCTL_BIT_* */
	uint32_t remap_usable;	/* 1: fastremap() uses this module */
	uint32_t library_abi;	/* the ABI version this library speaks */
};

#define FASTREMAP_ABI_INFO_SIZE_VER0	32

/*
 * Returns 0 and fills *info, or -ENODEV (no device), -EACCES/-EPERM (no
 * access), -ENOTTY (the device does not answer the handshake), -EINVAL
 * (bad size), or another open(2) error. errno is left unchanged.
 */
int fastremap_info(struct fastremap_abi_info *info);

/*
 * fastremap_move(): a batch of page moves inside existing private
 * anonymous mappings (a heap), for compacting collectors and arena
 * allocators; see fastremap_move(3). With the module: one system call,
 * one TLB flush, no mapping created or split. Without it: one
 * mremap(2) MREMAP_FIXED|MREMAP_DONTUNMAP per move, which splits the heap
 * mapping at every destination.
 */
struct fastremap_move_range {
	uint64_t src;	/* page-aligned source address */
	uint64_t dst;	/* page-aligned destination address, empty */
	uint64_t len;	/* bytes, a nonzero multiple of the page size */
};

/* flags of fastremap_move(): a hole in a source is skipped, not ENOENT. */
#define FASTREMAP_MOVE_HOLES	(1u << 0)
/* The largest count one call takes. */
#define FASTREMAP_MOVE_LIMIT	65536

/*
 * What one fastremap_move() call did. Set size to sizeof(struct
 * fastremap_move_stats) before the call; written as fastremap_stats is.
 */
struct fastremap_move_stats {
	uint32_t size;
	int used_module;	/* 1: the module answered; 0: the mremap(2) fallback */
	int reason;		/* enum fastremap_reason, when used_module is 0 */
	int reason_errno;	/* errno behind reason, or 0 */
	uint64_t done;		/* moves completed */
	uint64_t done_bytes;	/* bytes of moves[done] moved when the call stopped */
	uint64_t moved_pte;	/* pages moved (module only) */
	uint64_t tlb_flushes;	/* TLB flushes the module issued */
};

#define FASTREMAP_MOVE_STATS_SIZE_VER0	48

/*
 * Performs moves[0..count) in order. Returns 0, or a negative errno with
 * stats->done and stats->done_bytes telling how far it got: -EINVAL,
 * -EFAULT, -E2BIG (bad batch: nothing moved), -EEXIST (destination
 * populated), -ENOENT (source hole), -EBUSY (page shared or pinned), and
 * the others of fastremap_move(3). fr_flags: FASTREMAP_NO_FALLBACK or
 * FASTREMAP_MREMAP_ONLY as for fastremap_remap(). stats may be NULL.
 * errno is left unchanged.
 */
long fastremap_move(const struct fastremap_move_range *moves, size_t count,
		    unsigned int flags, unsigned int fr_flags,
		    struct fastremap_move_stats *stats);

/* A constant English description of a fastremap_reason; never NULL. */
const char *fastremap_strreason(int reason);

/* The library's version, such as "0.1.0". */
const char *fastremap_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FASTREMAP_H */
