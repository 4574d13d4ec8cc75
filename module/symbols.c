// SPDX-License-Identifier: GPL-2.0
/*
 * Resolves the internal kernel functions and data listed in symlist.h,
 * once, at load, and points each function's static call at it (see
 * symbols.h for why every call is a static call).
 *
 * kallsyms_lookup_name() is no longer exported, but a kprobe on it reveals
 * its address (register_kprobe() is exported on every supported kernel);
 * it is then called, like the others, through a static call: on 7.x it is
 * sealed too.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/uaccess.h>
#include <linux/sysfs.h>
#include "compat.h"
#include "ibt.h"

struct fr_symbols fr_sym __ro_after_init;

/*
 * The keys cannot be __ro_after_init: at unload the kernel unlinks the
 * module from each key it has call sites for (static_call_del_module()
 * writes key->mods), and the section is still read-only then. What a
 * call does is decided by the patched text, which is read-only anyway.
 */
DEFINE_STATIC_CALL_NULL(fr_sc_kallsyms_lookup_name, kallsyms_lookup_name);
DEFINE_STATIC_CALL_NULL(fr_sc___p4d_alloc, __p4d_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___pud_alloc, __pud_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___pmd_alloc, __pmd_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___pte_alloc, __pte_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___split_huge_pmd, __split_huge_pmd);
DEFINE_STATIC_CALL_NULL(fr_sc_pgtable_trans_huge_deposit,
			pgtable_trans_huge_deposit);
DEFINE_STATIC_CALL_NULL(fr_sc_pgtable_trans_huge_withdraw,
			pgtable_trans_huge_withdraw);
DEFINE_STATIC_CALL_NULL(fr_sc_flush_tlb_mm_range, fr_flush_tlb_mm_range_fn);
DEFINE_STATIC_CALL_NULL(fr_sc_flush_tlb_batched_pending,
			fr_flush_tlb_batched_pending_fn);
DEFINE_STATIC_CALL_NULL(fr_sc___mmu_notifier_invalidate_range_start,
			__mmu_notifier_invalidate_range_start);
DEFINE_STATIC_CALL_NULL(fr_sc___mmu_notifier_invalidate_range_end,
			__mmu_notifier_invalidate_range_end);
DEFINE_STATIC_CALL_NULL(fr_sc_copy_vma, fr_copy_vma_fn);
DEFINE_STATIC_CALL_NULL(fr_sc_do_munmap, do_munmap);
DEFINE_STATIC_CALL_NULL(fr_sc_vm_stat_account, vm_stat_account);
DEFINE_STATIC_CALL_NULL(fr_sc_may_expand_vm, fr_may_expand_vm_fn);
DEFINE_STATIC_CALL_NULL(fr_sc_security_vm_enough_memory_mm,
			security_vm_enough_memory_mm);
DEFINE_STATIC_CALL_NULL(fr_sc_unlink_anon_vmas, fr_unlink_anon_vmas_fn);
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6)
DEFINE_STATIC_CALL_NULL(fr_sc___get_unmapped_area, __get_unmapped_area);
#endif

struct fr_fn {
	const char *name;
	struct static_call_key *key;
	void *tramp;
};

#define FR_FN(fn) {							\
	.name = #fn,							\
	.key = &STATIC_CALL_KEY(fr_sc_##fn),				\
	.tramp = STATIC_CALL_TRAMP_ADDR(fr_sc_##fn),			\
}

/* kallsyms_lookup_name first: it resolves the others. */
static const struct fr_fn fr_fns[] = {
	FR_FN(kallsyms_lookup_name),
	FR_FN(__p4d_alloc),
	FR_FN(__pud_alloc),
	FR_FN(__pmd_alloc),
	FR_FN(__pte_alloc),
	FR_FN(__split_huge_pmd),
	FR_FN(pgtable_trans_huge_deposit),
	FR_FN(pgtable_trans_huge_withdraw),
	FR_FN(flush_tlb_mm_range),
	FR_FN(flush_tlb_batched_pending),
	FR_FN(__mmu_notifier_invalidate_range_start),
	FR_FN(__mmu_notifier_invalidate_range_end),
	FR_FN(copy_vma),
	FR_FN(do_munmap),
	FR_FN(vm_stat_account),
	FR_FN(may_expand_vm),
	FR_FN(security_vm_enough_memory_mm),
	FR_FN(unlink_anon_vmas),
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6)
	FR_FN(__get_unmapped_area),
#endif
};

/* What the load found out about each function, for the sysfs report. */
static struct {
	unsigned long addr;
	enum fr_entry entry;
	unsigned int sites;	/* call sites, each checked at load */
	unsigned int thunked;	/* of which through a call-depth thunk */
} fr_fn_state[ARRAY_SIZE(fr_fns)] __ro_after_init;

/* The module's other static call sites (the kernel's cond_resched...). */
static unsigned int fr_foreign_sites __ro_after_init;

#define FR_DATA(sym) { #sym, offsetof(struct fr_symbols, sym) }

static const struct {
	const char *name;
	size_t offset;
} fr_data[] = {
	FR_DATA(vm_committed_as),
	FR_DATA(vm_committed_as_batch),
	FR_DATA(sysctl_max_map_count),
};

#ifdef FR_TEST_HOOKS
/*
 * Test builds only: one more name to resolve as if it were required, so
 * the test suite can see a missing symbol fail the load with its name.
 */
static char *extra_symbol;
module_param(extra_symbol, charp, 0400);
MODULE_PARM_DESC(extra_symbol,
		 "also require this symbol at load (tests the failure path)");

/*
 * Test builds only, make check-ibt's negative control: after the load,
 * call kallsyms_lookup_name once through a pointer, which this module
 * otherwise never does. Under kernel IBT with ibt=warn the kernel logs
 * "Missing ENDBR" for it if the function is sealed; enforced, it faults.
 */
static bool ibt_pointer_call;
module_param(ibt_pointer_call, bool, 0400);
MODULE_PARM_DESC(ibt_pointer_call,
		 "call kallsyms_lookup_name through a pointer once (tests IBT)");

static noinline void fr_test_pointer_call(void)
{
	unsigned long (*fn)(const char *name);

	if (!ibt_pointer_call)
		return;
	fn = (void *)fr_fn_state[0].addr;
	/* Else the compiler may see through it and call directly. */
	OPTIMIZER_HIDE_VAR(fn);
	pr_warn("ibt_pointer_call: calling kallsyms_lookup_name at %pS through a pointer\n",
		fn);
	pr_warn("ibt_pointer_call: it returned %s\n",
		fn("kallsyms_lookup_name") == fr_fn_state[0].addr ?
		"its own address" : "something else");
}
#else
static const char *const extra_symbol;

static void fr_test_pointer_call(void)
{
}
#endif

static bool fr_read(unsigned long addr, u8 *buf, size_t len)
{
	return !copy_from_kernel_nofault(buf, (void *)addr, len);
}

/* Address of a kernel function, found with a kprobe on it; 0 if none. */
static unsigned long fr_kprobe_lookup(const char *name)
{
	struct kprobe kp = { .symbol_name = name };
	unsigned long addr;
	u8 before[4];

	if (register_kprobe(&kp) < 0)
		return 0;
	addr = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	if (!fr_read(addr - 4, before, sizeof(before)))
		return 0;
	return fr_kprobe_entry(addr, FR_KERNEL_IBT, before);
}

static unsigned long fr_lookup(const char *name)
{
	return fr_call(kallsyms_lookup_name, name);
}

/* Points static call @i at @addr, which is a kernel function's start. */
static int fr_set_call(size_t i, unsigned long addr)
{
	u8 insn[4];

	if (!fr_read(addr, insn, sizeof(insn))) {
		pr_err("internal kernel function %s: cannot read its entry\n",
		       fr_fns[i].name);
		return -EFAULT;
	}
	fr_fn_state[i].addr = addr;
	fr_fn_state[i].entry = fr_entry_kind(insn);
	__static_call_update(fr_fns[i].key, fr_fns[i].tramp, (void *)addr);
	return 0;
}

static int fr_resolve_function(size_t i)
{
	unsigned long addr = fr_lookup(fr_fns[i].name);

	if (!addr) {
		pr_err("internal kernel symbol %s not found: this kernel is not supported\n",
		       fr_fns[i].name);
		return -ENXIO;
	}
	return fr_set_call(i, addr);
}

static int fr_resolve_resolver(void)
{
	unsigned long addr = fr_kprobe_lookup("kallsyms_lookup_name");
	unsigned long self;
	int ret;

	if (!addr) {
		pr_err("internal kernel symbol kallsyms_lookup_name not found through a kprobe: this kernel is not supported\n");
		return -ENXIO;
	}
	ret = fr_set_call(0, addr);
	if (ret)
		return ret;
	/*
	 * A start corrected wrongly would still run the function (four
	 * bytes in, past ENDBR64 or its seal): its answer about itself
	 * tells.
	 */
	self = fr_lookup("kallsyms_lookup_name");
	if (self != addr) {
		pr_err("kallsyms_lookup_name: the kprobe gave %pS, the function says %pS\n",
		       (void *)addr, (void *)self);
		return -ENXIO;
	}
	return 0;
}

/* Is the branch patched at @at (@insn) a direct branch to @want? */
static bool fr_branches_to(const u8 *insn, unsigned long at,
			   unsigned long want, bool *thunked)
{
	unsigned long target = fr_direct_target(insn, at);

	*thunked = false;
	if (target == want)
		return true;
	/*
	 * With call-depth tracking (retbleed=stuff) static calls call the
	 * function's accounting thunk, in the padding just before it.
	 */
	if (IS_ENABLED(CONFIG_CALL_DEPTH_TRACKING) && insn[0] == 0xe8 &&
	    target >= want - 16 && target < want) {
		*thunked = true;
		return true;
	}
	return false;
}

static int fr_check_sites(void)
{
#ifdef CONFIG_HAVE_STATIC_CALL_INLINE
	struct static_call_site *site = THIS_MODULE->static_call_sites;
	unsigned int n = THIS_MODULE->num_static_call_sites;

	for (; n--; site++) {
		unsigned long at = (long)&site->addr + site->addr;
		unsigned long key = ((long)&site->key + site->key) &
				    ~STATIC_CALL_SITE_FLAGS;
		bool thunked;
		u8 insn[6];
		size_t i;

		if (!fr_read(at, insn, sizeof(insn))) {
			pr_err("cannot read the static call site at %pS\n",
			       (void *)at);
			return -EFAULT;
		}
		for (i = 0; i < ARRAY_SIZE(fr_fns); i++)
			if (key == (unsigned long)fr_fns[i].key)
				break;
		if (i == ARRAY_SIZE(fr_fns)) {
			/* A key of ours the table above forgot: never set. */
			if (within_module(key, THIS_MODULE)) {
				pr_err("static call site %pS: its key is not in the table of symbols.c\n",
				       (void *)at);
				return -ENOEXEC;
			}
			if (!fr_static_call_insn(insn)) {
				pr_err("static call site %pS is not a direct branch: %6ph\n",
				       (void *)at, insn);
				return -ENOEXEC;
			}
			fr_foreign_sites++;
			continue;
		}
		if (!fr_branches_to(insn, at, fr_fn_state[i].addr, &thunked)) {
			pr_err("%s: call site %pS is not a direct branch to it: %6ph\n",
			       fr_fns[i].name, (void *)at, insn);
			return -ENOEXEC;
		}
		fr_fn_state[i].sites++;
		fr_fn_state[i].thunked += thunked;
	}
#endif
	return 0;
}

/*
 * The load-time self-check: every trampoline and every call site of the
 * module is a direct branch to the function resolved for it, so no call
 * can land where IBT would fault.
 */
static int fr_selfcheck(void)
{
	bool thunked;
	u8 insn[6];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fr_fns); i++) {
		unsigned long at = (unsigned long)fr_fns[i].tramp;

		if (!fr_read(at, insn, sizeof(insn)) || insn[0] != 0xe9 ||
		    !fr_branches_to(insn, at, fr_fn_state[i].addr, &thunked)) {
			pr_err("%s: its static call trampoline is not a direct jump to it: %6ph\n",
			       fr_fns[i].name, insn);
			return -ENOEXEC;
		}
	}
	return fr_check_sites();
}

int __init fr_symbols_resolve(void)
{
	size_t i;
	int ret;

	BUILD_BUG_ON(sizeof(fr_sym) != ARRAY_SIZE(fr_data) * sizeof(void *));
	ret = fr_resolve_resolver();
	for (i = 1; !ret && i < ARRAY_SIZE(fr_fns); i++)
		ret = fr_resolve_function(i);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(fr_data); i++) {
		unsigned long addr = fr_lookup(fr_data[i].name);

		if (!addr) {
			pr_err("internal kernel symbol %s not found: this kernel is not supported\n",
			       fr_data[i].name);
			return -ENXIO;
		}
		*(void **)((char *)&fr_sym + fr_data[i].offset) = (void *)addr;
	}
	if (extra_symbol && !fr_lookup(extra_symbol)) {
		pr_err("internal kernel symbol %s not found: this kernel is not supported\n",
		       extra_symbol);
		return -ENXIO;
	}
	ret = fr_selfcheck();
	if (!ret)
		fr_test_pointer_call();
	return ret;
}

ssize_t fr_symbols_show(char *buf, size_t size)
{
	unsigned int sites = 0;
	ssize_t len = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fr_fns); i++)
		sites += fr_fn_state[i].sites;
	/* Without it the module is not loaded: this file exists only after. */
	len += scnprintf(buf + len, size - len,
			 "self-check passed: %zu functions, %u call sites, all direct; %u other static call sites\n",
			 ARRAY_SIZE(fr_fns), sites, fr_foreign_sites);
	for (i = 0; i < ARRAY_SIZE(fr_fns); i++)
		len += scnprintf(buf + len, size - len,
				 "%s entry=%s call=direct sites=%u%s%s\n",
				 fr_fns[i].name,
				 fr_entry_name(fr_fn_state[i].entry),
				 fr_fn_state[i].sites,
				 fr_fn_state[i].thunked ? " thunked" : "",
				 i == 0 ? " found=kprobe" : "");
	for (i = 0; i < ARRAY_SIZE(fr_data); i++)
		len += scnprintf(buf + len, size - len,
				 "%s entry=data call=none\n", fr_data[i].name);
	return len;
}
