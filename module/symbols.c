// SPDX-License-Identifier: GPL-2.0
/*
 * Resolves the internal kernel functions listed in symbols.h, once, at
 * load. kallsyms_lookup_name() is no longer exported, but a kprobe on it
 * reveals its address; register_kprobe() is exported on every supported
 * kernel.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/moduleparam.h>
#include <linux/uaccess.h>
#include <linux/sysfs.h>
#include "compat.h"
#include "ibt.h"

struct fr_symbols fr_sym;

#ifdef FR_TEST_HOOKS
/*
 * Test builds only: one more name to resolve as if it were required, so
 * the test suite can see a missing symbol fail the load with its name.
 */
static char *extra_symbol;
module_param(extra_symbol, charp, 0400);
MODULE_PARM_DESC(extra_symbol,
		 "also require this symbol at load (tests the failure path)");
#else
#define extra_symbol NULL
#endif

static unsigned long (*fr_kallsyms_lookup_name)(const char *name);

static bool fr_read_insn(unsigned long addr, u8 insn[4])
{
	return !copy_from_kernel_nofault(insn, (void *)addr, 4);
}

/* Address of a kernel symbol, as a kprobe placed on it sees it; 0 if none. */
static unsigned long fr_kprobe_lookup(const char *name)
{
	struct kprobe kp = { .symbol_name = name };
	unsigned long addr;
	u8 insn[4];

	if (register_kprobe(&kp) < 0)
		return 0;
	addr = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	/*
	 * On IBT kernels a probe on a function's entry lands after its
	 * ENDBR64; the function itself starts four bytes earlier.
	 */
	if (addr > 4 && fr_read_insn(addr - 4, insn) && fr_insn_is_endbr64(insn))
		addr -= 4;
	return addr;
}

/* May @addr be called through a function pointer? See ibt.h. */
static bool fr_ibt_callable(unsigned long addr)
{
	u8 insn[4];

	if (!fr_read_insn(addr, insn))
		return false;
	return fr_ibt_verdict(fr_kernel_ibt_enforced(), insn) ==
	       FR_IBT_CALLABLE;
}

static unsigned long fr_lookup(const char *name)
{
	if (fr_kallsyms_lookup_name)
		return fr_kallsyms_lookup_name(name);
	return fr_kprobe_lookup(name);
}

static int fr_resolve_one(const char *name, void **slot, bool data)
{
	unsigned long addr = fr_lookup(name);

	if (!addr) {
		pr_err("internal kernel symbol %s not found: this kernel is not supported\n",
		       name);
		return -ENXIO;
	}
	if (!data && !fr_ibt_callable(addr)) {
		pr_err("internal kernel symbol %s is sealed by kernel IBT (no ENDBR64); calling it would crash the kernel. Boot with ibt=off to use fastremap\n",
		       name);
		return -EOPNOTSUPP;
	}
	*slot = (void *)addr;
	return 0;
}

#define FR_SYM(name) { #name, offsetof(struct fr_symbols, name), false }
#define FR_DATA(name) { #name, offsetof(struct fr_symbols, name), true }

static const struct {
	const char *name;
	size_t offset;
	bool data;	/* not code: no ENDBR64 to check */
} fr_sym_table[] = {
	FR_SYM(__p4d_alloc),
	FR_SYM(__pud_alloc),
	FR_SYM(__pmd_alloc),
	FR_SYM(__pte_alloc),
	FR_SYM(__split_huge_pmd),
	FR_SYM(pgtable_trans_huge_deposit),
	FR_SYM(pgtable_trans_huge_withdraw),
	FR_SYM(flush_tlb_mm_range),
	FR_SYM(flush_tlb_batched_pending),
	FR_SYM(__mmu_notifier_invalidate_range_start),
	FR_SYM(__mmu_notifier_invalidate_range_end),
	FR_SYM(copy_vma),
	FR_SYM(do_munmap),
	FR_SYM(vm_stat_account),
	FR_SYM(may_expand_vm),
	FR_SYM(security_vm_enough_memory_mm),
	FR_SYM(unlink_anon_vmas),
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6)
	FR_SYM(__get_unmapped_area),
#endif
	FR_DATA(vm_committed_as),
	FR_DATA(vm_committed_as_batch),
	FR_DATA(sysctl_max_map_count),
};

static void **fr_sym_slot(size_t i)
{
	return (void **)((char *)&fr_sym + fr_sym_table[i].offset);
}

int fr_symbols_resolve(void)
{
	unsigned long addr;
	void *extra;
	size_t i;
	int ret;

	/* Every field of struct fr_symbols is a pointer named in the table. */
	BUILD_BUG_ON(sizeof(fr_sym) != ARRAY_SIZE(fr_sym_table) * sizeof(void *));

	addr = fr_kprobe_lookup("kallsyms_lookup_name");
	if (addr && fr_ibt_callable(addr))
		fr_kallsyms_lookup_name = (void *)addr;
	else
		pr_info("kallsyms_lookup_name is not callable here; resolving through kprobes\n");

	for (i = 0; i < ARRAY_SIZE(fr_sym_table); i++) {
		ret = fr_resolve_one(fr_sym_table[i].name, fr_sym_slot(i),
				     fr_sym_table[i].data);
		if (ret)
			return ret;
	}
	if (extra_symbol)
		return fr_resolve_one(extra_symbol, &extra, false);
	return 0;
}

ssize_t fr_symbols_show(char *buf, size_t size)
{
	ssize_t len = 0;
	size_t i;

	len += scnprintf(buf + len, size - len, "kallsyms_lookup_name %s\n",
			 fr_kallsyms_lookup_name ? "direct" : "kprobe");
	for (i = 0; i < ARRAY_SIZE(fr_sym_table); i++)
		len += scnprintf(buf + len, size - len, "%s %s\n",
				 fr_sym_table[i].name,
				 *fr_sym_slot(i) ? "resolved" : "missing");
	return len;
}
