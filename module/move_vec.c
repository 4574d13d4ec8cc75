// SPDX-License-Identifier: GPL-2.0
/*
 * FASTREMAP_IOC_MOVE's vector: read from the caller in one user-access
 * window, into a buffer kept with the open file; and checked, alignment,
 * bounds and overlaps, before any VMA is looked at.
 */
#include <linux/mm.h>
#include <linux/sort.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/uaccess.h>
#include <linux/fastremap.h>
#include "move.h"
#include "move_internal.h"
#include "mutant.h"

struct fr_range {
	unsigned long start, end;
};

static int fr_range_cmp(const void *a, const void *b)
{
	const struct fr_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* EINVAL if any two of @n ranges overlap (sorts @r). */
static int fr_ranges_disjoint(struct fr_range *r, u32 n)
{
	u32 k;

	sort(r, n, sizeof(*r), fr_range_cmp, NULL);
	for (k = 1; k < n; k++)
		if (r[k].start < r[k - 1].end)
			return -EINVAL;
	return 0;
}

static bool fr_overlap(unsigned long a, unsigned long alen, unsigned long b,
		       unsigned long blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * Whether sources and destinations both come in address order, each past
 * the end of the one before: then no two overlap, without a sort. A
 * compacting collector's vector usually does (it walks from-space in
 * order and bumps a pointer in to-space).
 */
static bool fr_vec_ascending(const struct fastremap_move_vec *v, u32 n)
{
	u32 k;

	for (k = 1; k < n; k++)
		if (v[k].src < v[k - 1].src + v[k - 1].len ||
		    v[k].dst < v[k - 1].dst + v[k - 1].len)
			return false;
	return true;
}

/*
 * Everything about the vector that needs no VMA: alignment, bounds,
 * overlaps, and the request structure outside every range (the result
 * is written there after the moves: inside a source it would fault a
 * fresh page in, inside a destination it would overwrite moved memory).
 */
int fr_move_check_vec(const struct fastremap_move_vec *v, u32 n,
			     unsigned long req, unsigned long req_len)
{
	struct fr_range *r;
	int ret = 0;
	u32 k;

	for (k = 0; k < n; k++) {
		if (!v[k].len || offset_in_page(v[k].src | v[k].dst | v[k].len))
			return -EINVAL;
		if (v[k].len > TASK_SIZE || v[k].src > TASK_SIZE - v[k].len ||
		    v[k].dst > TASK_SIZE - v[k].len)
			return -EINVAL;
		if (fr_overlap(v[k].src, v[k].len, v[k].dst, v[k].len))
			return -EINVAL;
		if (fr_overlap(req, req_len, v[k].src, v[k].len) ||
		    fr_overlap(req, req_len, v[k].dst, v[k].len))
			return -EINVAL;
	}
	if (n == 1 || fr_vec_ascending(v, n))
		return 0;
	r = kvmalloc_array(n, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	for (k = 0; k < n; k++)
		r[k] = (struct fr_range){ v[k].src, v[k].src + v[k].len };
	ret = fr_ranges_disjoint(r, n);
	if (!ret) {
		for (k = 0; k < n; k++)
			r[k] = (struct fr_range){ v[k].dst, v[k].dst + v[k].len };
		ret = fr_ranges_disjoint(r, n);
	}
	kvfree(r);
	return ret;
}

/*
 * The vector, read in one user-access window with 8-byte loads: a fault
 * gives EFAULT. x86's copy_from_user() is a "rep movsb" on CPUs with
 * fast short moves, which emulators (QEMU's TCG) run a byte at a time.
 */
int fr_move_copy_vec(struct fastremap_move_vec *v,
			    const struct fastremap_move_vec __user *u, u32 n)
{
	u32 k;

	if (!user_access_begin(u, (size_t)n * sizeof(*u)))
		return -EFAULT;
	for (k = 0; k < n; k++) {
		unsafe_get_user(v[k].src, &u[k].src, efault);
		unsafe_get_user(v[k].dst, &u[k].dst, efault);
		unsafe_get_user(v[k].len, &u[k].len, efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * Vectors up to this many moves (64 KiB) are read into a buffer kept with
 * the open file: a collector calls again and again, and a fresh buffer
 * per call costs as much as reading the vector, because Debian's kernels
 * zero every allocation (init_on_alloc), at a byte per step under QEMU's
 * TCG. The buffer grows to the largest such vector seen, rounded up to a
 * power of two of moves, so that a collector's usual batch allocates once.
 * Longer vectors, and calls that find the buffer in use by another
 * thread's call on the same file, allocate their own.
 */
#define FR_MOVE_KEEP	(SZ_64K / sizeof(struct fastremap_move_vec))

struct fr_move_file {
	unsigned long busy;		/* bit 0: a call is using vec */
	struct fastremap_move_vec *vec;
	u32 cap;			/* moves vec holds */
};

int fr_move_open(struct file *file)
{
	struct fr_move_file *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return -ENOMEM;
	file->private_data = f;
	return 0;
}

void fr_move_release(struct file *file)
{
	struct fr_move_file *f = file->private_data;

	kvfree(f->vec);
	kfree(f);
}

/*
 * A buffer for @count moves: the file's if no other call holds it (*kept
 * set), else a new one. fr_move_put_vec() gives it back.
 */
struct fastremap_move_vec *fr_move_get_vec(struct fr_move_file *f,
						  u32 count, bool *kept)
{
	u32 cap;

	*kept = false;
	if (count <= FR_MOVE_KEEP &&
	    (!test_and_set_bit_lock(0, &f->busy) || FR_MUTANT(MOVE_SHARED_VEC))) {
		if (f->cap < count) {
			cap = min_t(u32, roundup_pow_of_two(count), FR_MOVE_KEEP);
			kvfree(f->vec);
			f->vec = kvmalloc_array(cap, sizeof(*f->vec),
						GFP_KERNEL_ACCOUNT);
			f->cap = f->vec ? cap : 0;
		}
		if (f->vec) {
			*kept = true;
			return f->vec;
		}
		clear_bit_unlock(0, &f->busy);
	}
	return kvmalloc_array(count, sizeof(*f->vec), GFP_KERNEL_ACCOUNT);
}

void fr_move_put_vec(struct fr_move_file *f,
			    struct fastremap_move_vec *v, bool kept)
{
	if (kept)
		clear_bit_unlock(0, &f->busy);
	else
		kvfree(v);
}
