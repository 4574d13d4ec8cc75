// SPDX-License-Identifier: GPL-2.0
/*
 * Test builds only: hooks that let the test suite reach the mover's rare
 * paths deterministically. See testhooks.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include "testhooks.h"

static int fr_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

static atomic_t fail_table_alloc = ATOMIC_INIT(0);

static int fr_set_fail(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret || n < 0)
		return -EINVAL;
	atomic_set(&fail_table_alloc, n);
	return 0;
}

static const struct kernel_param_ops fr_fail_ops = {
	.set = fr_set_fail,
	.get = fr_param_get,
};
module_param_cb(fail_table_alloc, &fr_fail_ops, &fail_table_alloc, 0600);
MODULE_PARM_DESC(fail_table_alloc,
		 "fail page-table allocations from the Nth on (tests only)");

bool fr_hook_table_alloc_fails(void)
{
	int n = atomic_read(&fail_table_alloc);

	if (n == 1)
		return true;
	if (n > 1)
		atomic_cmpxchg(&fail_table_alloc, n, n - 1);
	return false;
}

enum { FR_HOLD_OFF, FR_HOLD_ARMED, FR_HOLD_WAITING };
static atomic_t hold_after_prepare = ATOMIC_INIT(FR_HOLD_OFF);
static DECLARE_WAIT_QUEUE_HEAD(fr_hold_wq);

static int fr_set_hold(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret || (n != FR_HOLD_OFF && n != FR_HOLD_ARMED))
		return -EINVAL;
	atomic_set(&hold_after_prepare, n);
	wake_up_all(&fr_hold_wq);
	return 0;
}

static const struct kernel_param_ops fr_hold_ops = {
	.set = fr_set_hold,
	.get = fr_param_get,
};
module_param_cb(hold_after_prepare, &fr_hold_ops, &hold_after_prepare, 0600);
MODULE_PARM_DESC(hold_after_prepare,
		 "1: hold the next move between preparing and moving until 0 is written (tests only)");

void fr_hook_prepared(void)
{
	if (atomic_cmpxchg(&hold_after_prepare, FR_HOLD_ARMED,
			   FR_HOLD_WAITING) != FR_HOLD_ARMED)
		return;
	if (!wait_event_timeout(fr_hold_wq,
				atomic_read(&hold_after_prepare) != FR_HOLD_WAITING,
				10 * HZ))
		pr_warn("hold_after_prepare: nobody released the hold in 10 s\n");
	atomic_set(&hold_after_prepare, FR_HOLD_OFF);
}

static atomic_t prepare_retries = ATOMIC_INIT(0);

static const struct kernel_param_ops fr_count_ops = {
	.get = fr_param_get,
};
module_param_cb(prepare_retries, &fr_count_ops, &prepare_retries, 0400);
MODULE_PARM_DESC(prepare_retries,
		 "passes that stalled and were prepared again (tests only)");

void fr_hook_stalled(void)
{
	atomic_inc(&prepare_retries);
}

/* Lets a test compare bounded and unbounded passes in one boot. */
static unsigned long pass_budget;
module_param(pass_budget, ulong, 0600);
MODULE_PARM_DESC(pass_budget,
		 "units of work per pass, 0 for the built-in bound (tests only)");

unsigned long fr_hook_pass_budget(unsigned long dflt)
{
	unsigned long n = READ_ONCE(pass_budget);

	return n ? n : dflt;
}
