/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How a kernel function's entry looks under kernel IBT, from its bytes.
 *
 * With CONFIG_X86_KERNEL_IBT, functions begin with ENDBR64. At boot the
 * kernel "seals" the ones it never calls through a pointer, whatever the
 * CPU: it overwrites their ENDBR64 with a 4-byte NOP that appears nowhere
 * else (arch/x86/kernel/alternative.c, poison_endbr()). A CPU that
 * enforces IBT faults on an indirect call to a sealed function, so the
 * module calls every internal function directly (static calls) and only
 * reports what it finds here.
 *
 * A kprobe placed on a function's entry skips ENDBR64 and the poison alike
 * (arch_adjust_kprobe_addr() uses is_endbr(), which accepts both, and
 * ENDBR32), so the address a kprobe reports must be moved back over them.
 *
 * Pure logic on bytes, with no kernel dependency, so that the host's unit
 * test compiles this very file.
 */
#ifndef FASTREMAP_IBT_H
#define FASTREMAP_IBT_H

enum fr_entry {
	FR_ENTRY_PLAIN,		/* no ENDBR: a kernel built without IBT */
	FR_ENTRY_ENDBR,		/* ENDBR64 (or ENDBR32): may be called indirectly */
	FR_ENTRY_SEALED,	/* the seal poison: direct calls only */
	FR_ENTRY_BTI_C,		/* arm64: BTI c or BTI jc, a landing pad for BLR */
	FR_ENTRY_PACSP,		/* arm64: PACIASP/PACIBSP, an implicit BTI c */
};

static inline int fr_bytes_are(const unsigned char *b, unsigned char b0,
			       unsigned char b1, unsigned char b2,
			       unsigned char b3)
{
	return b[0] == b0 && b[1] == b1 && b[2] == b2 && b[3] == b3;
}

/*
 * arm64 (BTI, CONFIG_ARM64_BTI_KERNEL): an indirect call (BLR) must land
 * on BTI c, BTI jc, or PACIASP/PACIBSP, which are implicit BTI c
 * landing pads (the kernel leaves SCTLR_EL1.BT1 clear). Anything else
 * faults where the CPU enforces BTI. arm64 kernels never seal: what the
 * compiler emitted is what runs. @insn: the first four bytes, little
 * endian.
 */
static inline enum fr_entry fr_bti_entry_kind(const unsigned char *insn)
{
	unsigned int w = insn[0] | insn[1] << 8 | insn[2] << 16 |
			 (unsigned int)insn[3] << 24;

	/* hint #34 (bti c), hint #38 (bti jc) */
	if (w == 0xd503245f || w == 0xd50324df)
		return FR_ENTRY_BTI_C;
	/* hint #25 (paciasp), hint #27 (pacibsp) */
	if (w == 0xd503233f || w == 0xd503237f)
		return FR_ENTRY_PACSP;
	return FR_ENTRY_PLAIN;
}

/* @insn: the first four bytes at a function's address. */
static inline enum fr_entry fr_entry_kind(const unsigned char *insn)
{
#ifdef __aarch64__
	return fr_bti_entry_kind(insn);
#endif
	/* endbr64 f3 0f 1e fa; endbr32 f3 0f 1e fb (is_endbr() takes both) */
	if (fr_bytes_are(insn, 0xf3, 0x0f, 0x1e, 0xfa) ||
	    fr_bytes_are(insn, 0xf3, 0x0f, 0x1e, 0xfb))
		return FR_ENTRY_ENDBR;
	/* up to 6.17: osp nopl (%rax); since 7.0: nopl -42(%rax) */
	if (fr_bytes_are(insn, 0x66, 0x0f, 0x1f, 0x00) ||
	    fr_bytes_are(insn, 0x0f, 0x1f, 0x40, 0xd6))
		return FR_ENTRY_SEALED;
	return FR_ENTRY_PLAIN;
}

static inline const char *fr_entry_name(enum fr_entry e)
{
	switch (e) {
	case FR_ENTRY_ENDBR:
		return "endbr";
	case FR_ENTRY_SEALED:
		return "sealed";
	case FR_ENTRY_BTI_C:
		return "bti-c";
	case FR_ENTRY_PACSP:
		return "pacsp";
	default:
		return "plain";
	}
}

/*
 * The start of a function, from the address a kprobe on its entry
 * reported. @ibt_built: the kernel was built with CONFIG_X86_KERNEL_IBT
 * (without it is_endbr() is always false and kprobes never skip).
 * @before: the four bytes just below @addr.
 */
static inline unsigned long fr_kprobe_entry(unsigned long addr, int ibt_built,
					    const unsigned char *before)
{
	if (ibt_built && addr >= 4 && fr_entry_kind(before) != FR_ENTRY_PLAIN)
		return addr - 4;
	return addr;
}

/*
 * The length of the direct branch @insn starts with: call or jmp rel32
 * (e8, e9: what static calls patch), or a conditional tail call jcc rel32
 * (0f 80..8f); 0 if it is none of these, an indirect call for one.
 */
static inline unsigned long fr_direct_len(const unsigned char *insn)
{
	if (insn[0] == 0xe8 || insn[0] == 0xe9)
		return 5;
	if (insn[0] == 0x0f && (insn[1] & 0xf0) == 0x80)
		return 6;
	return 0;
}

/* The target of the direct branch at @at (six bytes @insn); 0 if none. */
static inline unsigned long fr_direct_target(const unsigned char *insn,
					     unsigned long at)
{
	unsigned long len = fr_direct_len(insn);
	const unsigned char *rel = insn + len - 4;
	unsigned int u;

	if (!len)
		return 0;
	u = rel[0] | rel[1] << 8 | rel[2] << 16 | (unsigned int)rel[3] << 24;
	return at + len + (unsigned long)(long)(int)u;
}

/*
 * Is @insn one of the forms the kernel patches a static call site into
 * (arch/x86/kernel/static_call.c): a direct call, jmp or jcc, a 5-byte
 * NOP (no function), ret, or "xor %eax,%eax" (return 0)?
 */
static inline int fr_static_call_insn(const unsigned char *insn)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	static const unsigned char xor5rax[5] = { 0x2e, 0x2e, 0x2e, 0x31, 0xc0 };
	int k, nop = 1, xor = 1;

	for (k = 0; k < 5; k++) {
		nop &= insn[k] == nop5[k];
		xor &= insn[k] == xor5rax[k];
	}
	return nop || xor || insn[0] == 0xc3 || fr_direct_len(insn);
}

#endif /* FASTREMAP_IBT_H */
