// SPDX-License-Identifier: GPL-2.0
/*
 * fr_count's instruction decoding, checked on encodings taken from the
 * architecture manuals (each cross-checked with its binutils' objdump): which
 * instructions are markers, atomic read-modify-writes and TLB
 * invalidations (of which kind). The privileged ones cannot run under the
 * user-mode self-check (selftest.c).
 * TAP; the last line "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>
#include "decode.h"

static int pass, failed, n;

static void ok(int cond, const char *what)
{
	n++;
	if (cond)
		pass++;
	else
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
}

struct x86_case {
	const char *what;
	uint8_t b[12];
	size_t len;
	int atomic;
	const char *tlbi;
	int marker;
};

static const struct x86_case x86[] = {
	{ "lock xadd %eax,(%rdi)", { 0xf0, 0x0f, 0xc1, 0x07 }, 4, 1, NULL, 0 },
	{ "lock cmpxchg %rsi,(%rdi) (REX.W)", { 0xf0, 0x48, 0x0f, 0xb1, 0x37 }, 5, 1, NULL, 0 },
	{ "cmpxchg %rsi,(%rdi) (no LOCK)", { 0x48, 0x0f, 0xb1, 0x37 }, 4, 0, NULL, 0 },
	{ "xchg %rax,(%rdi)", { 0x48, 0x87, 0x07 }, 3, 1, NULL, 0 },
	{ "xchg %al,(%rdi)", { 0x86, 0x07 }, 2, 1, NULL, 0 },
	{ "xchg %rax,%rdx (registers)", { 0x48, 0x87, 0xc2 }, 3, 0, NULL, 0 },
	{ "lock orb $1,%gs:(%rax) (segment prefix)", { 0x65, 0xf0, 0x80, 0x08, 0x01 }, 5, 1, NULL, 0 },
	{ "mov %rax,(%rdi)", { 0x48, 0x89, 0x07 }, 3, 0, NULL, 0 },
	{ "invlpg (%rax)", { 0x0f, 0x01, 0x38 }, 3, 0, "invlpg", 0 },
	{ "swapgs (0f 01 /7, register form)", { 0x0f, 0x01, 0xf8 }, 3, 0, NULL, 0 },
	{ "mov %rdi,%cr3", { 0x0f, 0x22, 0xdf }, 3, 0, "cr3", 0 },
	{ "mov %rax,%cr4", { 0x0f, 0x22, 0xe0 }, 3, 0, NULL, 0 },
	{ "mov %cr3,%rax", { 0x0f, 0x20, 0xd8 }, 3, 0, NULL, 0 },
	{ "invpcid (%rdi),%rax", { 0x66, 0x0f, 0x38, 0x82, 0x07 }, 5, 0, "invpcid", 0 },
	{ "nopw 0x0(%rax,%rax,1) (the kernel's)", { 0x66, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 9,
	  0, NULL, M_NONE },
	{ "marker begin", { 0x66, 0x0f, 0x1f, 0x84, 0, 0x01, 0x00, 0x52, 0x46 }, 9, 0, NULL, M_BEGIN },
	{ "marker end", { 0x66, 0x0f, 0x1f, 0x84, 0, 0x02, 0x00, 0x52, 0x46 }, 9, 0, NULL, M_END },
	{ "marker commit", { 0x66, 0x0f, 0x1f, 0x84, 0, 0x06, 0x00, 0x52, 0x46 }, 9, 0, NULL,
	  M_COMMIT },
	{ "marker interrupt entry", { 0x66, 0x0f, 0x1f, 0x84, 0, 0x07, 0x00, 0x52, 0x46 }, 9, 0, NULL,
	  M_IRQ },
	{ "not a marker (K = 8)", { 0x66, 0x0f, 0x1f, 0x84, 0, 0x08, 0x00, 0x52, 0x46 }, 9, 0, NULL,
	  M_NONE },
};

struct arm64_case {
	const char *what;
	uint32_t insn;
	int atomic;
	const char *tlbi;
	int marker;
};

static const struct arm64_case a64[] = {
	{ "stxr w1, x0, [x2]", 0xc8017c40, 1, NULL, 0 },
	{ "stlxr w1, x0, [x2]", 0xc801fc40, 1, NULL, 0 },
	{ "ldxr x0, [x2]", 0xc85f7c40, 0, NULL, 0 },
	{ "ldaxr x0, [x2]", 0xc85ffc40, 0, NULL, 0 },
	{ "stxp w1, x0, x3, [x2]", 0xc8210c40, 1, NULL, 0 },
	{ "ldar x0, [x2]", 0xc8dffc40, 0, NULL, 0 },
	{ "stlr x0, [x2]", 0xc89ffc40, 0, NULL, 0 },
	{ "cas x0, x1, [x2]", 0xc8a07c41, 1, NULL, 0 },
	{ "casal x0, x1, [x2]", 0xc8e0fc41, 1, NULL, 0 },
	{ "casp x0, x1, x2, x3, [x4]", 0x48207c82, 1, NULL, 0 },
	{ "ldadd x0, x1, [x2]", 0xf8200041, 1, NULL, 0 },
	{ "ldaddal x0, x1, [x2]", 0xf8e00041, 1, NULL, 0 },
	{ "stset x0, [x2] (ldset, xzr)", 0xf820305f, 1, NULL, 0 },
	{ "swp x0, x1, [x2]", 0xf8208041, 1, NULL, 0 },
	{ "ldapr x0, [x2]", 0xf8bfc040, 0, NULL, 0 },
	{ "ldr x0, [x2]", 0xf9400040, 0, NULL, 0 },
	{ "str x0, [x2]", 0xf9000040, 0, NULL, 0 },
	{ "tlbi vae1is, x0", 0xd5088320, 0, "vae1is", 0 },
	{ "tlbi vale1is, x0", 0xd50883a0, 0, "vale1is", 0 },
	{ "tlbi aside1is, x0", 0xd5088340, 0, "aside1is", 0 },
	{ "tlbi vmalle1is", 0xd508831f, 0, "vmalle1is", 0 },
	{ "tlbi rvae1is, x0", 0xd5088220, 0, "rvae1is", 0 },
	{ "tlbi vae1, x0", 0xd5088720, 0, "vae1", 0 },
	{ "dc civac, x0 (SYS, CRn = 7)", 0xd50b7e20, 0, NULL, 0 },
	{ "dsb ish", 0xd5033b9f, 0, NULL, 0 },
	{ "nop", 0xd503201f, 0, NULL, M_NONE },
	{ "hint #105: marker begin", 0xd503201f | 105 << 5, 0, NULL, M_BEGIN },
	{ "hint #110: marker commit", 0xd503201f | 110 << 5, 0, NULL, M_COMMIT },
	{ "hint #111: marker interrupt entry", 0xd503201f | 111 << 5, 0, NULL, M_IRQ },
	{ "hint #112: no marker", 0xd503201f | 112 << 5, 0, NULL, M_NONE },
	{ "hint #34 (bti c): no marker", 0xd503245f, 0, NULL, M_NONE },
};

int main(void)
{
	char what[160], tk[24];
	const char *tx;
	size_t i;

	for (i = 0; i < sizeof(x86) / sizeof(x86[0]); i++) {
		const struct x86_case *c = &x86[i];
		int a = x86_classify(c->b, c->len, &tx);

		snprintf(what, sizeof(what), "x86 %s: atomic %d, tlbi %s, marker %d", c->what,
			 c->atomic, c->tlbi ? c->tlbi : "-", c->marker);
		ok(a == c->atomic && (c->tlbi ? tx && !strcmp(tx, c->tlbi) : !tx) &&
		   x86_marker(c->b, c->len) == c->marker, what);
	}
	for (i = 0; i < sizeof(a64) / sizeof(a64[0]); i++) {
		const struct arm64_case *c = &a64[i];
		int a = arm64_classify(c->insn, tk, sizeof(tk));

		snprintf(what, sizeof(what), "arm64 %s (%#010x): atomic %d, tlbi %s, marker %d",
			 c->what, c->insn, c->atomic, c->tlbi ? c->tlbi : "-", c->marker);
		ok(a == c->atomic && !strcmp(tk, c->tlbi ? c->tlbi : "") &&
		   arm64_marker(c->insn) == c->marker, what);
	}
	ok(x86_is_iret((const uint8_t *)"\x48\xcf", 2), "x86 iretq is an interrupt return");
	ok(!x86_is_iret((const uint8_t *)"\xcf", 1), "x86 iret (32-bit) is not the kernel's return");
	ok(arm64_is_eret(0xd69f03e0), "arm64 eret is an interrupt return");
	ok(!arm64_is_eret(0xd65f03c0), "arm64 ret is not");
	printf("1..%d\n%d passed, %d failed\n", n, pass, failed);
	return failed != 0;
}
