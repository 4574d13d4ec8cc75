// SPDX-License-Identifier: GPL-2.0
/*
 * fastremap: the misc device /dev/fastremap and its ioctls.
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
#include "remap.h"
#include "move.h"
#include "testhooks.h"

#define FR_IOCTL_BIT(cmd)	BIT_ULL(_IOC_NR(cmd))
#define FR_IOCTLS		(FR_IOCTL_BIT(FASTREMAP_IOC_INFO) | \
				 FR_IOCTL_BIT(FASTREMAP_IOC_REMAP) | \
				 FR_IOCTL_BIT(FASTREMAP_IOC_MOVE))

static u64 fr_features(void)
{
	u64 f = FASTREMAP_FEAT_MOVE | FASTREMAP_FEAT_POS_COOKIE |
		FASTREMAP_FEAT_REMAP_PINNED;

	if (FR_PER_VMA_LOCK)
		f |= FASTREMAP_FEAT_PER_VMA_LOCK;
	if (IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		f |= FASTREMAP_FEAT_THP;
	if (IS_ENABLED(CONFIG_HAVE_MOVE_PUD))
		f |= FASTREMAP_FEAT_MOVE_PUD;
	return f;
}

/*
 * Copies an extensible ioctl structure in: its first u32 is the caller's
 * size. Fields the caller did not pass read as zero; a caller that sets
 * fields this module does not know gets EINVAL, as does a size below the
 * first published one.
 */
int fr_copy_in(void *dst, size_t ksize, size_t minsize,
		      void __user *src, u32 *usize)
{
	const u64 __user *u = src;
	u64 *k = dst;
	size_t i;
	int ret;

	if (get_user(*usize, (u32 __user *)src))
		return -EFAULT;
	if (*usize < minsize || *usize > PAGE_SIZE)
		return -EINVAL;
	if (*usize != ksize || !IS_ALIGNED(ksize, sizeof(u64))) {
		ret = copy_struct_from_user(dst, ksize, src, *usize);
		return ret == -E2BIG ? -EINVAL : ret;
	}
	/*
	 * The caller's size is ours (the common case): 8-byte loads in one
	 * user-access window. copy_from_user() is a "rep movsb" on x86 CPUs
	 * with fast short moves, which QEMU's TCG runs a byte at a time,
	 * about a microsecond per structure.
	 */
	if (!user_access_begin(u, ksize))
		return -EFAULT;
	for (i = 0; i < ksize / sizeof(u64); i++)
		unsafe_get_user(k[i], &u[i], efault);
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/* copy_to_user() of @len bytes, with 8-byte stores when @len allows (fr_copy_in()). */
int fr_copy_out(void __user *dst, const void *src, size_t len)
{
	u64 __user *u = dst;
	const u64 *k = src;
	size_t i;

	if (!IS_ALIGNED(len, sizeof(u64)) || !IS_ALIGNED((unsigned long)src, sizeof(u64)))
		return copy_to_user(dst, src, len) ? -EFAULT : 0;
	if (!user_access_begin(u, len))
		return -EFAULT;
	for (i = 0; i < len / sizeof(u64); i++)
		unsafe_put_user(k[i], &u[i], efault);
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

static long fr_ioctl_info(void __user *uarg)
{
	struct fastremap_info info;
	u32 usize;
	int ret;

	ret = fr_copy_in(&info, sizeof(info), FASTREMAP_INFO_SIZE_VER0, uarg,
			 &usize);
	if (ret)
		return ret;
	/* abi_version, features and ioctls are outputs; their input is ignored. */
	if (info.flags || info.__pad0 ||
	    memchr_inv(info.reserved, 0, sizeof(info.reserved)))
		return -EINVAL;

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
	if (_IOC_TYPE(cmd) != FASTREMAP_IOC_MAGIC)
		return -ENOTTY;
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(FASTREMAP_IOC_INFO):
		if (_IOC_DIR(cmd) != _IOC_DIR(FASTREMAP_IOC_INFO))
			return -ENOTTY;
		return fr_ioctl_info(uarg);
	case _IOC_NR(FASTREMAP_IOC_REMAP):
		if (_IOC_DIR(cmd) != _IOC_DIR(FASTREMAP_IOC_REMAP))
			return -ENOTTY;
		/*
		 * Moves need the device open for writing, so that a site's
		 * read-only grant (a 0640 udev rule, say) allows INFO only.
		 */
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return fr_ioctl_remap(uarg);
	case _IOC_NR(FASTREMAP_IOC_MOVE):
		if (_IOC_DIR(cmd) != _IOC_DIR(FASTREMAP_IOC_MOVE))
			return -ENOTTY;
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
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
}

module_init(fr_init);
module_exit(fr_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The fastremap developers");
MODULE_DESCRIPTION("Relocate page-table entries with one TLB flush per call");
MODULE_VERSION(FR_VERSION);
