/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a function may be called through a pointer under kernel IBT.
 *
 * With CONFIG_X86_KERNEL_IBT, every indirect call must land on an ENDBR64.
 * At boot, on a CPU that enforces IBT, the kernel "seals" the functions it
 * never calls indirectly by overwriting their ENDBR64 with a NOP; an
 * indirect call to such a function raises #CP, a kernel crash. The module
 * calls the internal functions it resolves through pointers, so each one
 * must still begin with ENDBR64 when IBT is enforced.
 *
 * Pure logic on bytes, with no kernel dependency, so that the host's unit
 * test compiles this very file (the guest CPU under TCG has no IBT).
 */
#ifndef FASTREMAP_IBT_H
#define FASTREMAP_IBT_H

/* endbr64: f3 0f 1e fa */
#define FR_ENDBR64_0	0xf3
#define FR_ENDBR64_1	0x0f
#define FR_ENDBR64_2	0x1e
#define FR_ENDBR64_3	0xfa

enum fr_ibt_verdict {
	FR_IBT_CALLABLE,	/* not enforced, or the target has ENDBR64 */
	FR_IBT_SEALED,		/* enforced and no ENDBR64: never call it */
};

static inline int fr_insn_is_endbr64(const unsigned char *insn)
{
	return insn[0] == FR_ENDBR64_0 && insn[1] == FR_ENDBR64_1 &&
	       insn[2] == FR_ENDBR64_2 && insn[3] == FR_ENDBR64_3;
}

/*
 * @enforced: the kernel was built with IBT and the CPU enforces it.
 * @insn: the first four bytes at the function's address.
 */
static inline enum fr_ibt_verdict fr_ibt_verdict(int enforced,
						 const unsigned char *insn)
{
	if (!enforced)
		return FR_IBT_CALLABLE;
	return fr_insn_is_endbr64(insn) ? FR_IBT_CALLABLE : FR_IBT_SEALED;
}

#endif /* FASTREMAP_IBT_H */
