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
#include <linux/fs.h>
#include <linux/sysctl.h>
#include <linux/mman.h>
#include "symbols.h"
#include "ibt.h"

struct fr_symbols fr_sym __ro_after_init;

/*
 * The keys cannot be __ro_after_init: at unload the kernel unlinks the
 * module from each key it has call sites for (static_call_del_module()
 * writes key->mods), and the section is still read-only then. What a
 * call does is decided by the patched text, which is read-only anyway.
 */
DEFINE_STATIC_CALL_NULL(fr_sc_kallsyms_lookup_name, kallsyms_lookup_name);
#if !defined(__PAGETABLE_P4D_FOLDED)
DEFINE_STATIC_CALL_NULL(fr_sc___p4d_alloc, __p4d_alloc);
#endif
DEFINE_STATIC_CALL_NULL(fr_sc___pud_alloc, __pud_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___pmd_alloc, __pmd_alloc);
DEFINE_STATIC_CALL_NULL(fr_sc___pte_alloc, __pte_alloc);
#if defined(CONFIG_X86_64)
DEFINE_STATIC_CALL_NULL(fr_sc_pte_alloc_one, pte_alloc_one);
#endif
#if defined(FR_HAVE_PTE_FREE_DEFER)
DEFINE_STATIC_CALL_NULL(fr_sc_pte_free_defer, pte_free_defer);
#endif
DEFINE_STATIC_CALL_NULL(fr_sc___split_huge_pmd, __split_huge_pmd);
DEFINE_STATIC_CALL_NULL(fr_sc_pgtable_trans_huge_deposit,
			pgtable_trans_huge_deposit);
DEFINE_STATIC_CALL_NULL(fr_sc_pgtable_trans_huge_withdraw,
			pgtable_trans_huge_withdraw);
DEFINE_STATIC_CALL_NULL(fr_sc___anon_vma_prepare, fr___anon_vma_prepare_fn);
#if defined(FR_HAVE_FOLIO)
DEFINE_STATIC_CALL_NULL(fr_sc_swap_cache_get_folio,
			fr_swap_cache_get_folio_fn);
#if defined(FR_HAVE_SPLIT_FOLIO_TO_LIST)
DEFINE_STATIC_CALL_NULL(fr_sc_split_folio_to_list, split_folio_to_list);
#else
DEFINE_STATIC_CALL_NULL(fr_sc_split_huge_page_to_list,
			split_huge_page_to_list);
#endif
#endif
#if defined(CONFIG_X86_64)
DEFINE_STATIC_CALL_NULL(fr_sc_flush_tlb_mm_range, fr_flush_tlb_mm_range_fn);
#endif
#if defined(CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH)
DEFINE_STATIC_CALL_NULL(fr_sc_flush_tlb_batched_pending,
			fr_flush_tlb_batched_pending_fn);
#endif
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
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6) || \
	defined(FR_HAVE_GET_UNMAPPED_AREA_VMA_FLAGS)
DEFINE_STATIC_CALL_NULL(fr_sc___get_unmapped_area, __get_unmapped_area);
#endif

#if defined(CONFIG_ARM64) && defined(CONFIG_ARM64_MTE)
DEFINE_STATIC_CALL_NULL(fr_sc_mte_sync_tags, mte_sync_tags);
#define FR_FWD_MTE_SYNC_TAGS 1
#endif
#if defined(CONFIG_ARM64) && defined(CONFIG_ARM64_ERRATUM_4193714)
DEFINE_STATIC_CALL_NULL(fr_sc_sme_do_dvmsync, sme_do_dvmsync);
#define FR_FWD_SME_DO_DVMSYNC 1
#endif
#if defined(CONFIG_ARM64) && defined(CONFIG_MMU_NOTIFIER) && \
	defined(FR_HAVE_MMU_NOTIFIER_ARCH_SECONDARY_TLBS)
DEFINE_STATIC_CALL_NULL(fr_sc___mmu_notifier_arch_invalidate_secondary_tlbs,
			__mmu_notifier_arch_invalidate_secondary_tlbs);
#define FR_FWD_MMU_NOTIFIER_ARCH 1
#endif

#ifdef CONFIG_ARM64
/*
 * arm64's set_pte_at() and flush_tlb_range() are inlines that call
 * functions the kernel does not export. The module defines each such name
 * itself, as a forwarder: it loads what the function's static call key
 * holds (the generic static call's pointer, set and checked at load) and
 * branches there with BR x16, which BTI lets land on BTI c and PACIASP
 * alike. The link register is untouched, so the kernel's function returns
 * straight to the inline's caller, with the caller's arguments as they
 * were: the forwarder needs no prototype, whatever the kernel's is.
 */
#define FR_FORWARDER(fn)						\
	asm(".pushsection .text, \"ax\"\n"				\
	    ".globl " #fn "\n"						\
	    ".type " #fn ", %function\n"				\
	    ".balign 8\n"						\
	    #fn ":\n"							\
	    "	hint	34\n"	/* bti c: it is called, if directly */	\
	    "	ldr	x16, 1f\n"					\
	    "	ldr	x16, [x16]\n"					\
	    "	br	x16\n"						\
	    "	.balign	8\n"						\
	    "1:	.quad	" __stringify(STATIC_CALL_KEY(fr_sc_##fn)) "\n" \
	    ".size " #fn ", . - " #fn "\n"				\
	    ".popsection\n")
#ifdef FR_FWD_MTE_SYNC_TAGS
FR_FORWARDER(mte_sync_tags);
#endif
#ifdef FR_FWD_SME_DO_DVMSYNC
FR_FORWARDER(sme_do_dvmsync);
#endif
#ifdef FR_FWD_MMU_NOTIFIER_ARCH
FR_FORWARDER(__mmu_notifier_arch_invalidate_secondary_tlbs);
#endif
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
#if !defined(__PAGETABLE_P4D_FOLDED)
	FR_FN(__p4d_alloc),
#endif
	FR_FN(__pud_alloc),
	FR_FN(__pmd_alloc),
	FR_FN(__pte_alloc),
#if defined(CONFIG_X86_64)
	FR_FN(pte_alloc_one),
#endif
#if defined(FR_HAVE_PTE_FREE_DEFER)
	FR_FN(pte_free_defer),
#endif
	FR_FN(__split_huge_pmd),
	FR_FN(pgtable_trans_huge_deposit),
	FR_FN(pgtable_trans_huge_withdraw),
	FR_FN(__anon_vma_prepare),
#if defined(FR_HAVE_FOLIO)
	FR_FN(swap_cache_get_folio),
#if defined(FR_HAVE_SPLIT_FOLIO_TO_LIST)
	FR_FN(split_folio_to_list),
#else
	FR_FN(split_huge_page_to_list),
#endif
#endif
#if defined(CONFIG_X86_64)
	FR_FN(flush_tlb_mm_range),
#endif
#if defined(CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH)
	FR_FN(flush_tlb_batched_pending),
#endif
	FR_FN(__mmu_notifier_invalidate_range_start),
	FR_FN(__mmu_notifier_invalidate_range_end),
	FR_FN(copy_vma),
	FR_FN(do_munmap),
	FR_FN(vm_stat_account),
	FR_FN(may_expand_vm),
	FR_FN(security_vm_enough_memory_mm),
	FR_FN(unlink_anon_vmas),
#if defined(FR_HAVE_GET_UNMAPPED_AREA_6) || \
	defined(FR_HAVE_GET_UNMAPPED_AREA_VMA_FLAGS)
	FR_FN(__get_unmapped_area),
#endif
#ifdef FR_FWD_MTE_SYNC_TAGS
	FR_FN(mte_sync_tags),
#endif
#ifdef FR_FWD_SME_DO_DVMSYNC
	FR_FN(sme_do_dvmsync),
#endif
#ifdef FR_FWD_MMU_NOTIFIER_ARCH
	FR_FN(__mmu_notifier_arch_invalidate_secondary_tlbs),
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

#ifndef CONFIG_KALLSYMS_ALL
/*
 * Without CONFIG_KALLSYMS_ALL (Debian 12's arm64 kernel) kallsyms knows
 * functions only. Each datum is then found at load by watching an
 * exported function receive its address: a kprobe on that function,
 * armed for this task alone, while the module makes the kernel call it
 * once with the datum (fr_catch_*() below).
 */
struct fr_catch {
	struct kprobe kp;
	struct task_struct *task;
	unsigned long (*pick)(struct pt_regs *regs);
	unsigned long found;
};

static int fr_catch_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct fr_catch *c = container_of(kp, struct fr_catch, kp);

	if (c->task == current && !c->found)
		c->found = c->pick(regs);
	return 0;
}

/* Runs @call with a kprobe on @fn; what @pick took from its arguments. */
static unsigned long fr_catch(const char *fn,
			      unsigned long (*pick)(struct pt_regs *regs),
			      void (*call)(void))
{
	struct fr_catch c = {
		.kp = { .symbol_name = fn, .pre_handler = fr_catch_pre },
		.task = current,
		.pick = pick,
	};

	if (register_kprobe(&c.kp) < 0)
		return 0;
	call();
	unregister_kprobe(&c.kp);
	return c.found;
}

/* vm_memory_committed() sums vm_committed_as with __percpu_counter_sum(). */
static unsigned long fr_pick_arg0(struct pt_regs *regs)
{
	return regs_get_kernel_argument(regs, 0);
}

static void fr_call_vm_memory_committed(void)
{
	vm_memory_committed();
}

/* Reading vm.max_map_count hands proc_dointvec_minmax() its table. */
static unsigned long fr_pick_max_map_count(struct pt_regs *regs)
{
	const struct ctl_table *t = (void *)regs_get_kernel_argument(regs, 0);

	return t && t->procname && !strcmp(t->procname, "max_map_count") ?
	       (unsigned long)t->data : 0;
}

static void fr_read_max_map_count(void)
{
	struct file *f = filp_open("/proc/sys/vm/max_map_count", O_RDONLY, 0);
	char buf[16];
	loff_t pos = 0;

	if (IS_ERR(f))
		return;
	kernel_read(f, buf, sizeof(buf), &pos);
	filp_close(f, NULL);
}

/*
 * vm_committed_as_batch only bounds how far the per-CPU parts of the
 * counter may drift from its total; a batch of 0 adds to the total at
 * once, which is exact (and costs a lock per move, not per page).
 */
static s32 fr_exact_batch;

static unsigned long fr_data_fallback(const char *name)
{
	if (!strcmp(name, "vm_committed_as"))
		return fr_catch("__percpu_counter_sum", fr_pick_arg0,
				fr_call_vm_memory_committed);
	if (!strcmp(name, "sysctl_max_map_count"))
		return fr_catch("proc_dointvec_minmax", fr_pick_max_map_count,
				fr_read_max_map_count);
	if (!strcmp(name, "vm_committed_as_batch"))
		return (unsigned long)&fr_exact_batch;
	return 0;
}
#else
static unsigned long fr_data_fallback(const char *name)
{
	return 0;
}
#endif

#define FR_DATA(sym) { #sym, offsetof(struct fr_symbols, sym) }

static const struct {
	const char *name;
	size_t offset;
} fr_data[] = {
	FR_DATA(vm_committed_as),
	FR_DATA(vm_committed_as_batch),
	FR_DATA(sysctl_max_map_count),
};

/* How each datum was found, for the sysfs report. */
static bool fr_data_caught[ARRAY_SIZE(fr_data)] __ro_after_init;

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

#ifdef CONFIG_ARM64
/*
 * arm64's load-time self-check: each generic static call is a call
 * through its key's pointer (symbols.h), so every key must hold the
 * function resolved for it, and, on a kernel built for BTI, every
 * function must start with a landing pad for a call: else a CPU that
 * enforces BTI faults on the first call, as IBT would on x86.
 */
static int fr_selfcheck(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fr_fns); i++) {
		if ((unsigned long)READ_ONCE(fr_fns[i].key->func) !=
		    fr_fn_state[i].addr) {
			pr_err("%s: its static call does not point at it\n",
			       fr_fns[i].name);
			return -ENOEXEC;
		}
		if (IS_ENABLED(CONFIG_ARM64_BTI_KERNEL) &&
		    fr_fn_state[i].entry == FR_ENTRY_PLAIN) {
			pr_err("%s at %pS has no BTI landing pad: calling it through a pointer would fault\n",
			       fr_fns[i].name, (void *)fr_fn_state[i].addr);
			return -ENOEXEC;
		}
	}
	return 0;
}
#else
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
#endif

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
			addr = fr_data_fallback(fr_data[i].name);
			fr_data_caught[i] = addr;
		}
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
	if (IS_ENABLED(CONFIG_ARM64))
		len += scnprintf(buf + len, size - len,
				 "self-check passed: %zu functions, each through its key's pointer to it, %s\n",
				 ARRAY_SIZE(fr_fns),
				 IS_ENABLED(CONFIG_ARM64_BTI_KERNEL) ?
				 "all with a BTI landing pad" :
				 "no BTI in this kernel");
	else
		len += scnprintf(buf + len, size - len,
				 "self-check passed: %zu functions, %u call sites, all direct; %u other static call sites\n",
				 ARRAY_SIZE(fr_fns), sites, fr_foreign_sites);
	for (i = 0; i < ARRAY_SIZE(fr_fns); i++)
		len += scnprintf(buf + len, size - len,
				 "%s entry=%s call=%s sites=%u%s%s\n",
				 fr_fns[i].name,
				 fr_entry_name(fr_fn_state[i].entry),
				 IS_ENABLED(CONFIG_ARM64) ? "pointer" : "direct",
				 fr_fn_state[i].sites,
				 fr_fn_state[i].thunked ? " thunked" : "",
				 i == 0 ? " found=kprobe" : "");
	for (i = 0; i < ARRAY_SIZE(fr_data); i++)
		len += scnprintf(buf + len, size - len,
				 "%s entry=data call=none%s\n", fr_data[i].name,
				 fr_data_caught[i] ? " found=caught" : "");
	return len;
}
