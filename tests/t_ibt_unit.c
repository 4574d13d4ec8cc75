// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test of the module's kernel-IBT decision (module/ibt.h), on the
 * host: the guest CPU under emulation has no IBT, so the VM never sees a
 * sealed function.
 */
#include "../module/ibt.h"
#include "tap.h"

struct ibt_case {
	const char *name;
	int enforced;
	unsigned char insn[4];
	enum fr_ibt_verdict want;
};

static const struct ibt_case cases[] = {
	{ "IBT off, endbr64", 0, { 0xf3, 0x0f, 0x1e, 0xfa }, FR_IBT_CALLABLE },
	{ "IBT off, sealed (nop)", 0, { 0x0f, 0x1f, 0x40, 0x00 }, FR_IBT_CALLABLE },
	{ "IBT off, push rbp", 0, { 0x55, 0x48, 0x89, 0xe5 }, FR_IBT_CALLABLE },
	{ "IBT on, endbr64", 1, { 0xf3, 0x0f, 0x1e, 0xfa }, FR_IBT_CALLABLE },
	{ "IBT on, sealed: 4-byte nop", 1, { 0x0f, 0x1f, 0x40, 0x00 }, FR_IBT_SEALED },
	{ "IBT on, sealed: poison nopl -42(%rax)", 1, { 0x0f, 0x1f, 0x40, 0xd6 }, FR_IBT_SEALED },
	{ "IBT on, endbr32 is not endbr64", 1, { 0xf3, 0x0f, 0x1e, 0xfb }, FR_IBT_SEALED },
	{ "IBT on, plain push rbp", 1, { 0x55, 0x48, 0x89, 0xe5 }, FR_IBT_SEALED },
	{ "IBT on, one byte off", 1, { 0xf3, 0x0f, 0x1e, 0xfe }, FR_IBT_SEALED },
	{ "IBT on, int3 padding", 1, { 0xcc, 0xcc, 0xcc, 0xcc }, FR_IBT_SEALED },
};

int main(void)
{
	for (unsigned int k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		tap_ok(fr_ibt_verdict(cases[k].enforced, cases[k].insn) ==
		       cases[k].want, "ibt: %s", cases[k].name);
	return tap_done();
}
