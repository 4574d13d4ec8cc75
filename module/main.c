// SPDX-License-Identifier: GPL-2.0
/*
 * fastremap: the module's load and unload, the misc device /dev/fastremap,
 * its ioctls' dispatch and FASTREMAP_IOC_INFO.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/random.h>
#include <linux/uaccess.h>
#include <linux/string.h>
#include <linux/device.h>
#include <linux/fastremap.h>
#include "compat.h"
#include "symbols.h"
#include "remap.h"
#include "uaccess.h"
#include "move.h"
#include "testhooks.h"

#define FR_IOCTL_BIT(cmd)	BIT_ULL(_IOC_NR(cmd))
#define FR_IOCTLS		(FR_IOCTL_BIT(FASTREMAP_IOC_INFO) | \
				 FR_IOCTL_BIT(FASTREMAP_IOC_REMAP) | \
				 (FR_MOVE_SUPPORTED ? \
				  FR_IOCTL_BIT(FASTREMAP_IOC_MOVE) : 0))
/* An ioctl command without its size bits. */
#define FR_IOC_NOSIZE(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

static u64 fr_features(void)
{
	u64 f = FASTREMAP_FEAT_POS_COOKIE | FASTREMAP_FEAT_REMAP_PINNED;

	if (FR_MOVE_SUPPORTED)
		f |= FASTREMAP_FEAT_MOVE;

	if (FR_PER_VMA_LOCK)
		f |= FASTREMAP_FEAT_PER_VMA_LOCK;
	if (IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		f |= FASTREMAP_FEAT_THP;
	/*
	 * pgmove.c moves whole PUD entries on every supported architecture,
	 * whether or not the kernel's own mremap(2) does: the second bit is
	 * the library's to route by (5.10's mremap(2) moves PMDs only).
	 */
	f |= FASTREMAP_FEAT_MOVE_PUD;
	if (FR_MREMAP_MOVES_PUD)
		f |= FASTREMAP_FEAT_MREMAP_PUD;
	return f;
}

static long fr_ioctl_info(void __user *uarg)
{
	struct fastremap_info info;
	u32 usize;
	int ret;

	/* abi_version, features and ioctls are outputs; their input is ignored. */
	ret = fr_copy_request(&info, FASTREMAP_INFO_SIZE_VER0, uarg, &usize, 0);
	if (ret)
		return ret;

	memset(&info, 0, sizeof(info));
	info.size = min_t(u32, usize, sizeof(info));
	info.abi_version = FASTREMAP_ABI_VERSION;
	info.features = fr_features();
	info.ioctls = FR_IOCTLS;
	if (copy_to_user(uarg, &info, info.size))
		return -EFAULT;
	return 0;
}

static long fr_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	/*
	 * Dispatch on type, number and direction, not size: structures grow
	 * through their size field, so the size bits of a newer caller's
	 * command may differ from ours.
	 */
	switch (FR_IOC_NOSIZE(cmd)) {
	case FR_IOC_NOSIZE(FASTREMAP_IOC_INFO):
		return fr_ioctl_info(uarg);
	case FR_IOC_NOSIZE(FASTREMAP_IOC_REMAP):
	case FR_IOC_NOSIZE(FASTREMAP_IOC_MOVE):
		/*
		 * Moves need the device open for writing, so that a site's
		 * read-only grant (a 0640 udev rule, say) allows INFO only.
		 */
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		if (_IOC_NR(cmd) == _IOC_NR(FASTREMAP_IOC_REMAP))
			return fr_ioctl_remap(uarg);
		return fr_ioctl_move(file, uarg);
	}
	return -ENOTTY;
}

static int fr_open(struct inode *inode, struct file *file)
{
	/*
	 * FASTREMAP_FEAT_POS_COOKIE: noop_llseek() reports f_pos and never
	 * changes it, and nothing else here reads or writes it.
	 */
	file->f_pos = (get_random_u64() >> 2) | 1;
	return fr_move_open(file);
}

static int fr_release(struct inode *inode, struct file *file)
{
	fr_move_release(file);
	return 0;
}

static const struct file_operations fr_fops = {
	/* An open file pins the module: rmmod is refused while one exists. */
	.owner = THIS_MODULE,
	.open = fr_open,
	.release = fr_release,
	.unlocked_ioctl = fr_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static ssize_t symbols_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return fr_symbols_show(buf, PAGE_SIZE);
}
static DEVICE_ATTR_RO(symbols);

static struct attribute *fr_attrs[] = {
	&dev_attr_symbols.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fr);

static struct miscdevice fr_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "fastremap",
	.fops = &fr_fops,
	/*
	 * Root only by default: the device rewrites page tables. Sites grant
	 * a group access with the udev rule shipped in udev/.
	 */
	.mode = 0600,
	.groups = fr_groups,
};

static int __init fr_init(void)
{
	int ret;

	ret = fr_symbols_resolve();
	if (ret)
		goto err;
	ret = misc_register(&fr_misc);
	if (ret) {
		pr_err("cannot register /dev/fastremap: %d\n", ret);
		goto err;
	}
	pr_info("ready: ABI %u, features %#llx\n", FASTREMAP_ABI_VERSION,
		fr_features());
	return 0;
err:
	return ret;
}

static void __exit fr_exit(void)
{
	misc_deregister(&fr_misc);
	fr_hooks_exit();
	/* The copying mover's table frees still queued run our code. */
	rcu_barrier();
}

module_init(fr_init);
module_exit(fr_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The fastremap developers");
MODULE_DESCRIPTION("Relocate page-table entries with one TLB flush per call");
MODULE_VERSION(FR_VERSION);
