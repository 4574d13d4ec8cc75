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

#define FASTREMAP_IOC_INFO	_IOWR(FASTREMAP_IOC_MAGIC, 0x00, struct fastremap_info)

#endif /* _UAPI_LINUX_FASTREMAP_H */
