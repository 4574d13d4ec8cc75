// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- contenders ---- */

const char *const cont_name[NCONT] = { "fastremap", "mremap", "uffdio_move", "memcpy" };

int frfd = -1, uffd = -1;
char fr_unavail[96], uffd_unavail[96];
struct fastremap_info fr_info;

void open_contenders(void)
{
	struct uffdio_api api;
	int fd;

	frfd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	if (frfd < 0) {
		snprintf(fr_unavail, sizeof(fr_unavail), "no %s (%s)",
			 FASTREMAP_DEVICE, strerror(errno));
	} else {
		memset(&fr_info, 0, sizeof(fr_info));
		fr_info.size = sizeof(fr_info);
		if (ioctl(frfd, FASTREMAP_IOC_INFO, &fr_info) ||
		    !(fr_info.ioctls & (1ULL << _IOC_NR(FASTREMAP_IOC_REMAP))))
			snprintf(fr_unavail, sizeof(fr_unavail),
				 "module without FASTREMAP_IOC_REMAP");
	}

	/* Probe with no features requested: the kernel reports them all. */
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		snprintf(uffd_unavail, sizeof(uffd_unavail), "userfaultfd: %s",
			 strerror(errno));
		return;
	}
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	if (ioctl(fd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		snprintf(uffd_unavail, sizeof(uffd_unavail),
			 "no UFFD_FEATURE_MOVE on this kernel");
		close(fd);
		return;
	}
	close(fd);
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	api.features = UFFD_FEATURE_MOVE;
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		snprintf(uffd_unavail, sizeof(uffd_unavail), "UFFDIO_API: %s",
			 strerror(errno));
		if (uffd >= 0)
			close(uffd);
		uffd = -1;
	}
}

int uffd_register(void *addr, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)addr;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	return ioctl(uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}


int need_module, direct_module;

/*
 * The timed operation. Returns 0 or -errno. fastremap's statistics land
 * in *fs, to be counted by count_move() after the clock stops: the timed
 * section holds the call and nothing of the bench's bookkeeping.
 */
static inline int do_move(int c, char *src, size_t len, char *dst,
			  struct fastremap_stats *fs)
{
	switch (c) {
	case C_FR: {
		/*
		 * Through libfastremap, as programs call it: the library
		 * routes the moves mremap(2) makes as fast to mremap(2)
		 * (fastremap_remap(3), ROUTING) and the module gets the rest.
		 */
		void *res = NULL;
		long r;

		fs->size = sizeof(*fs);
		r = fastremap_remap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst,
				    direct_module ? FASTREMAP_NO_ROUTING : 0, fs, &res);
		if (r)
			return (int)r;
		return res == dst ? 0 : -EFAULT;
	}
	case C_MREMAP: {
		void *p = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);

		if (p == MAP_FAILED)
			return -errno;
		return p == dst ? 0 : -EFAULT;
	}
	case C_UFFD: {
		struct uffdio_move m;
		size_t done = 0;

		while (done < len) {
			memset(&m, 0, sizeof(m));
			m.dst = (uintptr_t)dst + done;
			m.src = (uintptr_t)src + done;
			m.len = len - done;
			m.mode = UFFDIO_MOVE_MODE_DONTWAKE;
			if (ioctl(uffd, UFFDIO_MOVE, &m) == 0) {
				done = len;
				break;
			}
			if (errno != EAGAIN || m.move <= 0)
				return -errno;
			done += m.move;
		}
		return 0;
	}
	case C_MEMCPY:
		memcpy(dst, src, len);
		return 0;
	}
	return -EINVAL;
}

/* Adds what fastremap reported for one move of do_move() to *st. */
static int count_move(int c, int err, const struct fastremap_stats *fs,
		      struct frstats *st)
{
	if (err || c != C_FR)
		return err;
	if (need_module && !fs->used_module)
		return -ENOTSUP;
	st->pud += fs->moved_pud;
	st->pmd += fs->moved_pmd;
	st->thp += fs->moved_thp;
	st->pte += fs->moved_pte;
	st->contpte += fs->moved_contpte;
	st->unfolded += fs->unfolded_contpte;
	st->flushes += fs->tlb_flushes;
	st->module += fs->used_module;
	st->calls++;
	return 0;
}

int timed_move(int c, char *src, size_t len, char *dst, struct frstats *st, double *us)
{
	struct fastremap_stats fs;
	double t0, t1;
	int err;

	count_id(c, len);
	t_tlb_on();
	t0 = now_us();
	count_open();
	err = do_move(c, src, len, dst, &fs);
	count_end();
	t1 = now_us();
	err = count_move(c, err, &fs, st);
	t_tlb_off();
	*us = t1 - t0;
	return err;
}
