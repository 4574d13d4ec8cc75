// SPDX-License-Identifier: GPL-2.0
/*
 * One move through the module, with a data check: what make check-ibt runs
 * in Bochs's emulated Tiger Lake, where kernel IBT is enforced. Small on
 * purpose (Bochs runs some tens of millions of instructions a second): a
 * 4 MiB anonymous mapping, PMD-misaligned source, every word checked.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/fastremap.h>
#include "tlib.h"

int main(void)
{
	size_t len = SZ_4M, words = len / sizeof(uint64_t), bad = 0;
	int fd = t_open();
	uint64_t *src, *dst, *p;
	char *area;

	if (!tap_ok(fd >= 0, "open %s", FASTREMAP_DEVICE))
		return tap_done();
	/* One reservation: source a page into it, destination PMD-aligned after. */
	area = mmap(NULL, 4 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!tap_ok(area != MAP_FAILED, "reserve 16 MiB"))
		return tap_done();
	src = (uint64_t *)(area + PG);
	dst = (uint64_t *)T_ALIGN_UP((uintptr_t)area + len + PG, PMD_SZ);
	if (!tap_ok(mmap(src, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == src,
		    "map 4 MiB"))
		return tap_done();
	for (size_t k = 0; k < words; k++)
		src[k] = t_mix64(k);
	p = t_remap(fd, src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst, NULL);
	tap_ok(p == dst, "FASTREMAP_IOC_REMAP moves 4 MiB to %p (got %p, %s)",
	       (void *)dst, (void *)p, p == MAP_FAILED ? strerror(errno) : "ok");
	if (p == dst)
		for (size_t k = 0; k < words; k++)
			bad += dst[k] != t_mix64(k);
	tap_ok(p == dst && bad == 0, "every word arrived (%zu wrong)", bad);
	close(fd);
	return tap_done();
}
