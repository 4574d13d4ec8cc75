// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test of module/ibt.h, on the host: how a function's entry is
 * classified, how a kprobe's address is moved back to the function's
 * start, and how the load-time self-check reads the branches static calls
 * patch. The byte patterns are the kernels' own: ENDBR64 (and ENDBR32,
 * which is_endbr() also accepts), the seal poison of 6.1-6.17
 * (66 0f 1f 00) and of 7.x (0f 1f 40 d6); on arm64 the BTI landing pads
 * the self-check accepts under CONFIG_ARM64_BTI_KERNEL.
 */
#define _GNU_SOURCE
#include "../module/ibt.h"
#include "tlib.h"

#define ENDBR64		{ 0xf3, 0x0f, 0x1e, 0xfa }
#define ENDBR32		{ 0xf3, 0x0f, 0x1e, 0xfb }
#define SEAL_6		{ 0x66, 0x0f, 0x1f, 0x00 }
#define SEAL_7		{ 0x0f, 0x1f, 0x40, 0xd6 }

static const struct entry_case {
	const char *name;
	unsigned char insn[4];
	enum fr_entry want;
} entry_cases[] = {
	{ "endbr64", ENDBR64, FR_ENTRY_ENDBR },
	{ "endbr32", ENDBR32, FR_ENTRY_ENDBR },
	{ "6.x seal: osp nopl (%rax)", SEAL_6, FR_ENTRY_SEALED },
	{ "7.x seal: nopl -42(%rax)", SEAL_7, FR_ENTRY_SEALED },
	{ "push rbp; mov rsp,rbp", { 0x55, 0x48, 0x89, 0xe5 }, FR_ENTRY_PLAIN },
	{ "plain nop4 is no seal", { 0x0f, 0x1f, 0x40, 0x00 }, FR_ENTRY_PLAIN },
	{ "endbr64, last byte off", { 0xf3, 0x0f, 0x1e, 0xfe }, FR_ENTRY_PLAIN },
	{ "6.x seal, last byte off", { 0x66, 0x0f, 0x1f, 0x01 }, FR_ENTRY_PLAIN },
	{ "7.x seal, last byte off", { 0x0f, 0x1f, 0x40, 0xd7 }, FR_ENTRY_PLAIN },
	{ "int3 padding", { 0xcc, 0xcc, 0xcc, 0xcc }, FR_ENTRY_PLAIN },
	{ "nop padding", { 0x90, 0x90, 0x90, 0x90 }, FR_ENTRY_PLAIN },
};

/*
 * arm64 (BTI): the first instruction, little endian, as the load-time
 * self-check reads it. Only BTI c, BTI jc and PACIASP/PACIBSP take a call
 * through a register (BLR); BTI j and a bare BTI take none.
 */
#define A64(w) { (w) & 0xff, (w) >> 8 & 0xff, (w) >> 16 & 0xff, (w) >> 24 & 0xff }

static const struct entry_case bti_cases[] = {
	{ "bti c", A64(0xd503245fu), FR_ENTRY_BTI_C },
	{ "bti jc", A64(0xd50324dfu), FR_ENTRY_BTI_C },
	{ "paciasp", A64(0xd503233fu), FR_ENTRY_PACSP },
	{ "pacibsp", A64(0xd503237fu), FR_ENTRY_PACSP },
	{ "bti j: no landing pad for a call", A64(0xd503249fu), FR_ENTRY_PLAIN },
	{ "bti (no target): none either", A64(0xd503241fu), FR_ENTRY_PLAIN },
	{ "nop (patchable entry)", A64(0xd503201fu), FR_ENTRY_PLAIN },
	{ "stp x29, x30, [sp, #-16]!", A64(0xa9bf7bfdu), FR_ENTRY_PLAIN },
	{ "autiasp is no landing pad", A64(0xd50323bfu), FR_ENTRY_PLAIN },
	{ "bti c, bytes reversed (big endian)", { 0xd5, 0x03, 0x24, 0x5f }, FR_ENTRY_PLAIN },
};

/* What a kprobe reported, and the bytes just below it. */
static const struct kprobe_case {
	const char *name;
	int ibt_built;
	unsigned char before[4];
	unsigned long reported, want;
} kprobe_cases[] = {
	{ "IBT kernel, endbr64 skipped", 1, ENDBR64, 0x1004, 0x1000 },
	{ "IBT kernel, endbr32 skipped", 1, ENDBR32, 0x1004, 0x1000 },
	{ "IBT kernel, 6.x seal skipped", 1, SEAL_6, 0x1004, 0x1000 },
	{ "IBT kernel, 7.x seal skipped", 1, SEAL_7, 0x1004, 0x1000 },
	{ "IBT kernel, no ENDBR: kprobe on the entry", 1, { 0x90, 0x90, 0x90, 0x90 },
	  0x1000, 0x1000 },
	{ "IBT kernel, int3 before", 1, { 0xcc, 0xcc, 0xcc, 0xcc }, 0x1000, 0x1000 },
	{ "no IBT: never moved, even after endbr64 bytes", 0, ENDBR64, 0x1000, 0x1000 },
	{ "no IBT: never moved, even after 6.x seal bytes", 0, SEAL_6, 0x1000, 0x1000 },
	{ "no IBT: never moved, even after 7.x seal bytes", 0, SEAL_7, 0x1000, 0x1000 },
	{ "IBT kernel, address below 4", 1, ENDBR64, 0x2, 0x2 },
};

static const struct branch_case {
	const char *name;
	unsigned char insn[6];
	unsigned long at, target;	/* target 0: not a direct branch */
	int static_call_form;
} branch_cases[] = {
	{ "call rel32 forward", { 0xe8, 0x10, 0x00, 0x00, 0x00 }, 0x1000, 0x1015, 1 },
	{ "call rel32 backward", { 0xe8, 0xfb, 0xf7, 0xff, 0xff }, 0x1000, 0x0800, 1 },
	{ "call rel32 to the kernel, from a module",
	  { 0xe8, 0x00, 0x00, 0x00, 0x80 }, 0xffffffffc0000000UL,
	  0xffffffff40000005UL, 1 },
	{ "jmp rel32 (tail call, trampoline)", { 0xe9, 0xfb, 0x0f, 0x00, 0x00 }, 0x1000,
	  0x2000, 1 },
	{ "jne rel32 (conditional tail call)", { 0x0f, 0x85, 0xfa, 0x0f, 0x00, 0x00 }, 0x1000,
	  0x2000, 1 },
	{ "call *%rax", { 0xff, 0xd0, 0x90, 0x90, 0x90 }, 0x1000, 0, 0 },
	{ "call *0x0(%rip) (pv_ops)", { 0xff, 0x15, 0x00, 0x00, 0x00, 0x00 }, 0x1000, 0, 0 },
	{ "jmp *%rax", { 0xff, 0xe0, 0x90, 0x90, 0x90 }, 0x1000, 0, 0 },
	{ "nop5: static call to nothing", { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 0x1000, 0, 1 },
	{ "xor %eax,%eax: return 0", { 0x2e, 0x2e, 0x2e, 0x31, 0xc0 }, 0x1000, 0, 1 },
	{ "ret", { 0xc3, 0xcc, 0xcc, 0xcc, 0xcc }, 0x1000, 0, 1 },
	{ "two-byte nop is no static call", { 0x66, 0x90, 0x90, 0x90, 0x90 }, 0x1000, 0, 0 },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	for (unsigned int k = 0; k < N(entry_cases); k++) {
		const struct entry_case *c = &entry_cases[k];
		enum fr_entry got = fr_entry_kind(c->insn);

		tap_ok(got == c->want, "entry: %s is %s (got %s)", c->name,
		       fr_entry_name(c->want), fr_entry_name(got));
	}
	for (unsigned int k = 0; k < N(bti_cases); k++) {
		const struct entry_case *c = &bti_cases[k];
		enum fr_entry got = fr_bti_entry_kind(c->insn);

		tap_ok(got == c->want, "arm64 entry: %s is %s (got %s)", c->name,
		       fr_entry_name(c->want), fr_entry_name(got));
	}
	for (unsigned int k = 0; k < N(kprobe_cases); k++) {
		const struct kprobe_case *c = &kprobe_cases[k];
		unsigned long got = fr_kprobe_entry(c->reported, c->ibt_built,
						    c->before);

		tap_ok(got == c->want, "kprobe: %s: %#lx -> %#lx (got %#lx)",
		       c->name, c->reported, c->want, got);
	}
	for (unsigned int k = 0; k < N(branch_cases); k++) {
		const struct branch_case *c = &branch_cases[k];
		unsigned long got = fr_direct_target(c->insn, c->at);

		tap_ok(got == c->target, "branch: %s: target %#lx (got %#lx)",
		       c->name, c->target, got);
		tap_ok(!fr_static_call_insn(c->insn) == !c->static_call_form,
		       "branch: %s %s a static call site's form", c->name,
		       c->static_call_form ? "is" : "is not");
	}
	return tap_done();
}
