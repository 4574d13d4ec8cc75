// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading: refused while a file is open (the file pins the module),
 * refused again and again while threads are inside remap ioctls, even
 * after the file was closed under them (each in-flight ioctl holds its
 * own reference to the file); clean once the last ioctl has returned, with
 * every region intact. Then the module loads again from /fastremap.ko (the
 * guest's copy) and unloads again. Runs last in the VM: the module is gone
 * after.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "tlib.h"

#define WORKERS		3
#define REGION		(16 * SZ_1M)
#define KO_PATH		"/fastremap.ko"

static long unload(void)
{
	return syscall(SYS_delete_module, "fastremap", O_NONBLOCK);
}

static int refused(long r)
{
	return r == -1 && (errno == EWOULDBLOCK || errno == EBUSY);
}

struct worker {
	pthread_t t;
	int fd, id;
	char *at[2];		/* the region moves between these */
	int cur;		/* where it is now */
	long moves, bad_errno, bad_data;
	volatile int *stop;
};

/*
 * Moves a 16 MiB region back and forth until the file is gone (EBADF) or
 * the test stops; the data is checked after each move. DONTUNMAP keeps
 * the vacated range mapped (empty): a hole there could take another
 * thread's new stack, which the next FIXED move would then replace.
 */
static void *work(void *p)
{
	struct worker *w = p;

	while (!*w->stop) {
		void *r = t_remap(w->fd, w->at[w->cur], REGION, REGION,
				   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
				   w->at[!w->cur], NULL);

		if (r == MAP_FAILED) {
			if (errno != EBADF)
				w->bad_errno++;
			break;
		}
		w->cur = !w->cur;
		w->moves++;
		if (t_verify_pattern(w->at[w->cur], REGION, 1000 + w->id, 64 * SZ_4K) >= 0)
			w->bad_data++;
	}
	return NULL;
}

static void unload_race(void)
{
	struct worker w[WORKERS];
	struct t_area area[WORKERS];
	volatile int stop = 0;
	long tries = 0, refusals = 0, moves = 0, bad_errno = 0, bad_data = 0;
	long r = -1, lost = 0;
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	double t0;

	if (!tap_ok(fd >= 0, "device opens for the race"))
		return;
	for (int i = 0; i < WORKERS; i++) {
		char *base = t_reserve(2 * REGION + PMD_SZ, &area[i]);

		w[i] = (struct worker){ .fd = fd, .id = i, .stop = &stop };
		w[i].at[0] = (char *)T_ALIGN_UP((uintptr_t)base, PMD_SZ);
		w[i].at[1] = w[i].at[0] + REGION;
		/* Misaligned by a page: the move is PTE by PTE, slow enough to race. */
		w[i].at[1] += PG;
		for (int k = 0; k < 2; k++)
			mmap(w[i].at[k], REGION, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		t_fill_pattern(w[i].at[0], REGION, 1000 + i);
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	/* Unload attempts while the workers are inside ioctls, file open. */
	t0 = t_now();
	while (t_now() - t0 < 0.5) {
		r = unload();
		tries++;
		refusals += refused(r);
		if (!r)
			break;
	}
	tap_ok(refusals == tries, "%ld unload attempts during remaps: all refused (%ld)",
	       tries, refusals);
	/*
	 * Close the file under the workers, then try until the unload goes
	 * through: it may only once the last ioctl in flight has returned.
	 */
	close(fd);
	t0 = t_now();
	tries = refusals = 0;
	while (r && t_now() - t0 < 20) {
		r = unload();
		tries++;
		refusals += refused(r);
	}
	stop = 1;
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(w[i].t, NULL);
		moves += w[i].moves;
		bad_errno += w[i].bad_errno;
		bad_data += w[i].bad_data;
		/* Wherever each region ended, it is whole and the other place empty. */
		lost += t_verify_pattern(w[i].at[w[i].cur], REGION, 1000 + i, PG) >= 0;
		lost += t_verify_zero(w[i].at[!w[i].cur], REGION, PG) >= 0;
		t_release(&area[i]);
	}
	tap_ok(r == 0, "unload succeeds after the file was closed under %d moving threads (%ld attempts, %ld refused first)",
	       WORKERS, tries, refusals);
	tap_ok(moves > 0 && !bad_errno && !bad_data && !lost,
	       "%ld moves, each checked: %ld odd errnos, %ld bad data, %ld regions lost",
	       moves, bad_errno, bad_data, lost);
}

int main(void)
{
	int fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	long r;

	if (!tap_ok(fd >= 0, "device opens"))
		return tap_done();
	r = unload();
	tap_ok(refused(r), "unload refused while a file is open (%s)",
	       r ? t_errname(errno) : "succeeded");
	tap_ok(access("/sys/module/fastremap", F_OK) == 0,
	       "module still loaded after the refused unload");
	close(fd);

	unload_race();
	tap_ok(access("/sys/module/fastremap", F_OK) != 0 &&
	       access(FASTREMAP_DEVICE, F_OK) != 0,
	       "module and device node are gone");

	/* A second life: load, use, unload. */
	fd = open(KO_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		tap_skip_test("no " KO_PATH " in this root", "module loads again");
		return tap_done();
	}
	r = syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	tap_ok(r == 0, "module loads again (%s)", r ? t_errname(errno) : "0");
	fd = open(FASTREMAP_DEVICE, O_RDWR | O_CLOEXEC);
	{
		struct fastremap_info i;

		tap_ok(fd >= 0 && t_info(fd, &i) == 0, "the reloaded device answers INFO");
	}
	if (fd >= 0)
		close(fd);
	r = unload();
	tap_ok(r == 0, "and unloads again (%s)", r ? t_errname(errno) : "0");
	tap_ok(access("/sys/module/fastremap", F_OK) != 0 &&
	       access(FASTREMAP_DEVICE, F_OK) != 0,
	       "module and device node are gone");
	return tap_done();
}
